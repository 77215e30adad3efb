"""The steps of a training job inside a Slurm allocation: which command runs on which nodes.

`job_steps(config, job, ...)` lays the preset's roles out over the allocation's first
`node_count(config)` nodes, as `srun` steps of the one job:

    ray node i      `ray start --block` on every node (the head on node 0), when the run's
                    sandboxes go through Ray (`ray_nodes.py`)
    vllm server     `vllm serve` on the node after the training nodes, when the preset has one
    training        `accelerate launch ... -m tbrl_lib.cli train run` on the training nodes,
                    one task each, its machine rank from `$SLURM_PROCID`; when the server shares
                    the single training node (2xa100, 8xh100-async), the launch files' one-node
                    body instead (the GPUs split between them, the server started first)

The commands are the launch files' own (`launch.py`: `train_command`, `server_command`,
`ray_node_argv`), so a job and `commands.sh` run the same thing. Every step is `srun
--overlap`: the job's steps share its nodes (and each sees the node's GPUs), since the job
itself decides what runs where. The environment every step gets: `MAIN_IP` (training node
0, accelerate's rendezvous), `VLLM_HOST` (the server node) and `RAY_ADDRESS`.
The notebook's job (`train/job/`) starts them in this order and waits for each role.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from tbrl_lib.slurm import Allocation
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.plan.launch import (
    gpu_split,
    node_count,
    server_command,
    server_shares_node,
    server_url,
    train_command,
    uses_server,
)
from tbrl_lib.train.plan.ray_nodes import NodePorts, ray_address, ray_node_argv
from tbrl_lib.train.plan.scripts import STOP_STARTED, single_node_body


@dataclass(frozen=True)
class Step:
    """One `srun` step: `command` (a bash line) once on each of `nodes`."""

    role: str
    nodes: tuple[str, ...]
    command: str

    def srun(self) -> list[str]:
        n = len(self.nodes)
        return [
            "srun",
            "--overlap",
            f"--nodes={n}",
            f"--ntasks={n}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(self.nodes)}",
            "--unbuffered",
            f"--job-name={self.role.replace(' ', '-')}",
            "bash",
            "-c",
            self.command,
        ]


@dataclass(frozen=True)
class JobSteps:
    """A job's steps by role, and the environment they all run with."""

    ray: list[Step] = field(default_factory=list)
    server: Step | None = None
    server_health: str | None = None
    """The server's base URL (its `/health` is polled before training starts)."""
    training: Step | None = None
    env: dict[str, str] = field(default_factory=dict)


def job_steps(
    config: TrainConfig,
    job: Allocation,
    accelerate_yaml: str,
    run_dir: str,
    overrides: Sequence[str] = (),
    resume: str = "",
    ports: NodePorts | None = None,
    ray_temp: str | None = None,
    ray: str = "ray",
) -> JobSteps:
    """The steps of `config`'s run on `job`'s nodes (see module docstring): `overrides` its
    `--set` items, `resume` its `--resume`, `ports` and `ray_temp` the Ray nodes' own (see
    `ray_nodes.py`), `ray` the `ray` program."""
    needed = node_count(config)
    if len(job.nodes) < needed:
        raise ValueError(
            f"preset {config.preset} needs {needed} nodes; job {job.job_id} has {len(job.nodes)}"
        )
    nodes, addresses = job.nodes[:needed], job.addresses[:needed]
    trainers = config.launch.num_nodes
    env = {"MAIN_IP": addresses[0]}
    if server_shares_node(config):
        env["VLLM_HOST"] = addresses[0]
    elif uses_server(config) and config.launch.vllm_server_nodes:
        env["VLLM_HOST"] = addresses[trainers]
    ray_steps = []
    if config.rollout.sandbox.backend == "ray":
        env["RAY_ADDRESS"] = ray_address(addresses[0], ports)
        for i, (node, address) in enumerate(zip(nodes, addresses, strict=True)):
            temp = f"{ray_temp}-{i}" if ray_temp else None
            argv = ray_node_argv(config, i, addresses[0], ports, address, temp, ray)
            ray_steps.append(Step(f"ray node {i}", (node,), shlex.join(argv)))
    split = gpu_split(config)  # (trainer's, server's) GPUs when they share the node
    devices = split[0] if split else None
    train = train_command(config, accelerate_yaml, run_dir, overrides, devices, resume)
    train += " --no-summary"  # the notebook renders it
    server = health = None
    if server_shares_node(config):
        body = [*STOP_STARTED, *single_node_body(config, {"train": train})]
        training = Step("training", nodes[:1], "\n".join(body))
    else:
        if "VLLM_HOST" in env:
            server = Step("vllm server", (nodes[trainers],), server_command(config))
            health = server_url(config).replace("${VLLM_HOST}", env["VLLM_HOST"])
        per_node = f"MACHINE_RANK=$SLURM_PROCID; exec {train}"
        training = Step("training", nodes[:trainers], per_node)
    return JobSteps(ray_steps, server, health, training, env)
