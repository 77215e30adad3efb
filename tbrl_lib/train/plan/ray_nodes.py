"""The Ray cluster a job starts for its sandboxes (`rollout.sandbox.backend: ray`): one `ray
start --block` per node of the job, the head on the first, a worker on every other, each
declaring `launch.units_per_node` units of the `sandbox` resource (Ray's own recipe for
Slurm). Every training process then joins it through `RAY_ADDRESS`. `ray_node_command` is the
one definition: `commands.sh` runs it on plain machines, the notebook's job (`train/job/`)
under `srun` in an allocation.

Nodes that share one address (a test cluster whose nodes are one machine) need ports of
their own: `NodePorts` derives every port of node `index` from one base, a block of free
ports the job picks (`free_block`) below the kernel's ephemeral range, and each node gets a
temp dir of its own. On separate machines the same ports are simply free on each.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

from tbrl_lib.train.config.config import TrainConfig

RAY_START_ENV = {"RAY_raylet_start_wait_time_s": "180", "RAY_agent_register_timeout_ms": "180000"}
"""What each `ray start` of a job runs with: on a loaded machine a raylet takes more than
Ray's default 30 s to register, and `ray start` gives up (measured here, load 10)."""
RAY_PORT = 6379
"""The head's port when the ports are Ray's defaults (`commands.sh` on separate machines)."""
FIXED_PORTS = 16
"""Ports of one node beside its workers': GCS, node manager, object manager, agents, ..."""


def worker_ports(config: TrainConfig) -> int:
    """Ports a node keeps for its Ray worker processes: one per sandbox actor and per driver,
    with room for Ray's pool."""
    return 2 * config.launch.units_per_node + 64


@dataclass(frozen=True)
class NodePorts:
    """Every port of each node of a job's Ray cluster, from one base (see module docstring)."""

    base: int
    workers: int
    """Worker ports per node."""

    @property
    def per_node(self) -> int:
        return FIXED_PORTS + self.workers

    @property
    def head(self) -> int:
        return self.base

    def flags(self, index: int) -> list[str]:
        first = self.base + index * self.per_node
        ports = {
            "node-manager-port": first + 1,
            "object-manager-port": first + 2,
            "dashboard-agent-listen-port": first + 3,
            "dashboard-agent-grpc-port": first + 4,
            "runtime-env-agent-port": first + 5,
            "metrics-export-port": first + 6,
            "min-worker-port": first + FIXED_PORTS,
            "max-worker-port": first + self.per_node - 1,
        }
        if index == 0:
            ports["ray-client-server-port"] = first + 7
        return [f"--{name}={port}" for name, port in ports.items()]


def ray_node_argv(
    config: TrainConfig,
    index: int,
    head: str,
    ports: NodePorts | None = None,
    address: str | None = None,
    temp_dir: str | None = None,
    ray: str = "ray",
) -> list[str]:
    """`ray start --block` for node `index` of the job (0: the head), declaring its sandbox
    units; `head` is the head's address (`$MAIN_IP` in the scripts), `address` this node's
    own (Ray finds it when None), `ports` every port (Ray's defaults when None)."""
    units = json.dumps({config.rollout.sandbox.ray.resource: config.launch.units_per_node})
    port = ports.head if ports else RAY_PORT
    env = [f"{k}={v}" for k, v in RAY_START_ENV.items()]
    args = ["env", *env, ray, "start", "--block", "--disable-usage-stats", f"--resources={units}"]
    if index == 0:
        args += ["--head", f"--port={port}", "--include-dashboard=false"]
    else:
        args.append(f"--address={head}:{port}")
    if address:
        args.append(f"--node-ip-address={address}")
    if temp_dir:
        args.append(f"--temp-dir={temp_dir}")
    return args + (ports.flags(index) if ports else [])


def ray_node_command(config: TrainConfig, index: int, head: str = "$MAIN_IP") -> str:
    """`ray_node_argv` as a line of the scripts (Ray's default ports, `$VARS` left to bash)."""
    args = ray_node_argv(config, index, head)
    return " ".join(a if "$" in a else shlex.quote(a) for a in args)


def ray_address(head: str, ports: NodePorts | None = None) -> str:
    """`RAY_ADDRESS` of the cluster whose head is at `head`."""
    return f"{head}:{ports.head if ports else RAY_PORT}"


def free_block(size: int) -> int:
    """The first port of `size` free ones (bindable on every interface) below the kernel's
    ephemeral range, starting at a place that differs between processes, so two jobs on one
    machine pick different blocks."""
    low = _ephemeral_low()
    starts = range(10_000, low - size, size)
    if not starts:
        raise RuntimeError(f"no block of {size} ports below {low} for the job's Ray cluster")
    first = (os.getpid() * 7) % len(starts)
    for index in [*range(first, len(starts)), *range(first)]:
        start = starts[index]
        if all(_bindable(p) for p in range(start, start + size)):
            return start
    raise RuntimeError(f"no {size} free ports below {low} for the job's Ray cluster")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True
