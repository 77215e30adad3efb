"""The Slurm allocation this process runs in (`sbatch`'s script, `salloc`'s command), read
from what Slurm sets (`SLURM_JOB_ID`, `SLURM_JOB_NODELIST`, the GPU variables) and from
`scontrol` (node names, addresses): `allocation()`, None outside one. `tbrl doctor` shows it;
the training job starts its roles on its nodes (`train/job/`).

Left out: heterogeneous jobs (every node is taken to have the job's GPUs per node) and
allocations spread over several clusters.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

SCONTROL_TIMEOUT_S = 30.0


class SlurmError(RuntimeError):
    """Slurm's own tools failed to answer about the allocation; the message says which."""


@dataclass(frozen=True)
class Allocation:
    """A Slurm job's nodes, as this process sees them."""

    job_id: str
    nodes: tuple[str, ...]
    """Node names in Slurm's order (the batch script runs on the first)."""
    gpus_per_node: int
    addresses: tuple[str, ...]
    """Each node's address (`NodeAddr`), in the order of `nodes`."""
    step: str | None = None
    """The job step this process belongs to (inside `srun`), else None."""

    def describe(self) -> str:
        gpus = f" x {self.gpus_per_node} GPU(s)" if self.gpus_per_node else ", no GPU"
        step = f", step {self.step}" if self.step is not None else ""
        return f"job {self.job_id}: {len(self.nodes)} node(s) ({', '.join(self.nodes)}){gpus}{step}"


def allocation() -> Allocation | None:
    """The allocation this process runs in, or None when `SLURM_JOB_ID` is unset."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST", "")
    nodes = tuple(_scontrol("show", "hostnames", nodelist).split()) if nodelist else ()
    return Allocation(
        job_id=job,
        nodes=nodes,
        gpus_per_node=gpus_per_node(),
        addresses=node_addresses(nodes),
        step=os.environ.get("SLURM_STEP_ID"),
    )


def gpus_per_node() -> int:
    """GPUs the job has on each node: `--gpus-per-node` (`SLURM_GPUS_PER_NODE`, maybe
    `type:N`), else what this node was given (`SLURM_GPUS_ON_NODE`, `SLURM_JOB_GPUS`)."""
    per_node = os.environ.get("SLURM_GPUS_PER_NODE", "")
    if per_node:
        return int(per_node.rsplit(":", 1)[-1].split("(")[0])
    if os.environ.get("SLURM_GPUS_ON_NODE", "").isdigit():
        return int(os.environ["SLURM_GPUS_ON_NODE"])
    job_gpus = os.environ.get("SLURM_JOB_GPUS", "")
    return len(job_gpus.split(",")) if job_gpus else 0


def node_addresses(nodes: tuple[str, ...]) -> tuple[str, ...]:
    """Each node's `NodeAddr` (its name when Slurm gives none)."""
    if not nodes:
        return ()
    found: dict[str, str] = {}
    for line in _scontrol("-o", "show", "node", ",".join(nodes)).splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "NodeName" in fields:
            found[fields["NodeName"]] = fields.get("NodeAddr") or fields["NodeName"]
    return tuple(found.get(n, n) for n in nodes)


def _scontrol(*args: str) -> str:
    if shutil.which("scontrol") is None:
        raise SlurmError("SLURM_JOB_ID is set but scontrol is not on PATH (install slurm-client)")
    try:
        done = subprocess.run(
            ["scontrol", *args],
            capture_output=True,
            text=True,
            timeout=SCONTROL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as err:
        raise SlurmError(f"scontrol {' '.join(args)} did not answer in {err.timeout:.0f}s") from err
    if done.returncode != 0:
        raise SlurmError(f"scontrol {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout
