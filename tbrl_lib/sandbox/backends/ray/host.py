"""`SandboxActor`: one Ray actor per sandbox, holding one unit of the `sandbox` resource.

Ray places the actor on a node with a free unit (`cluster.spawn`: `resources={resource: 1}`,
no CPU) and the unit is the actor's for as long as it lives: closing the sandbox ends the
actor and gives the unit back; a lost node takes its actors with it, so Ray frees their units
and the caller's next call fails as `node_lost` (nothing is counted by convention). The actor
runs a `DockerSandbox` on its node's engine (`DOCKER_HOST` of the node's `ray start`, else the
local socket), so images are built, volumes made, limits enforced and the verifier's isolated
operations done where the container is, by the same code as the `docker` backend.
Containers carry `tbrl.node` (the Ray node id) besides the run's labels.

Leftovers: a driver that dies takes its actors with it (Ray's owner fate-sharing), and so
does a lost node; the containers they leave have a dead owner (the actor's process). A
sandbox's start reaps the dead owners' containers of its node's engine (the docker backend's
automatic reap, once per process, and every actor is a process of its own), and `reap_node`,
which the backend's `reap()` runs on every live node, does it on demand (only one run's
containers when given its id).
"""

from __future__ import annotations

from tbrl_lib.docker import engine, reaper
from tbrl_lib.sandbox.backends.docker import pristine_volume
from tbrl_lib.sandbox.backends.docker.container import DockerSandbox
from tbrl_lib.sandbox.backends.ray.cluster import current_node_id
from tbrl_lib.sandbox.base import (
    CommandResult,
    ExecResult,
    IsolatedCommand,
    SandboxClosed,
    SandboxStats,
)
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

LABEL_NODE = "tbrl.node"


class SandboxActor:
    """One sandbox on the node Ray placed it on (see module docstring); made a Ray actor by
    `cluster.spawn`."""

    def __init__(self) -> None:
        self.node_id = current_node_id()
        self.sandbox: DockerSandbox | None = None

    def node(self) -> str:
        """The node this actor (and its unit) landed on; answering it means placed."""
        return self.node_id

    async def open(self, task: Task, config: SandboxConfig) -> dict:
        """Start the sandbox; what the caller's proxy needs to know about it."""
        sandbox = DockerSandbox(task, config, labels={LABEL_NODE: self.node_id})
        self.sandbox = sandbox
        await sandbox.start()
        return {
            "runtime_dir": sandbox.runtime_dir,
            "workdir": sandbox.workdir,
            "startup_seconds": sandbox.stats.startup_seconds,
            "limits_applied": dict(sandbox.limits_applied),
            "container_id": sandbox.container_id,
        }

    def _get(self) -> DockerSandbox:
        if self.sandbox is None:
            raise SandboxClosed(f"the sandbox on node {self.node_id[:8]} is not open")
        return self.sandbox

    async def run(self, cmd: str, timeout: float | None) -> CommandResult:
        return await self._get().run(cmd, timeout)

    async def write_file(self, path: str, content: bytes, mode: int) -> None:
        await self._get().write_file(path, content, mode)

    async def read_file(self, path: str, max_bytes: int | None) -> bytes:
        return await self._get().read_file(path, max_bytes)

    async def exec_isolated(self, command: IsolatedCommand) -> ExecResult:
        return await self._get().exec_isolated(command)

    async def put_archive(self, path: str, tar: bytes) -> None:
        await self._get().put_archive(path, tar)

    async def close(self) -> SandboxStats | None:
        """Remove the container; its stats (None when it was not open). The caller then ends
        the actor, which gives the unit back."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is None:
            return None
        await sandbox.close()
        return sandbox.stats


def prune_node_caches() -> int:
    """Remove this node's pristine volumes no container mounts; how many. Run by
    `cluster.on_each_node`."""
    client = engine.client()
    try:
        return len(pristine_volume.prune(client)[0])
    finally:
        client.close()


def reap_node(run_id: str | None = None) -> int:
    """Remove the dead owners' tbrl objects on this node's engine (only `run_id`'s containers
    when given); how many. Run by `cluster.on_each_node`."""
    client = engine.client()
    try:
        return reaper.reap(client, run_id=run_id).removed
    finally:
        client.close()
