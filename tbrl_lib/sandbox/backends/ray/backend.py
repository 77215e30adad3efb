"""`RayBackend`: each rollout's sandbox placed by Ray on a node with a free `sandbox` unit.

Open = spawn the sandbox's own actor (`host.SandboxActor`), which needs one `sandbox` unit:
Ray's scheduler picks the node, keeping the actor pending while the cluster is full, so the
capacity is global across every process and job; the actor starts a `DockerSandbox` on its
node and the caller talks to it through a `RaySandbox` (`remote.py`); close = remove the
container, end the actor, and Ray frees the unit. Images are built on the node that needs
them, when a sandbox first lands there (`prepare` only checks that the cluster has somewhere
to run).

A node lost mid-run takes its actors with it: Ray frees their units, their rollouts' calls
fail as `node_lost` (infrastructure: masked in training, rerun in evaluation, on the nodes
left), and the node's containers are reaped when it is back (`reap()`, or the automatic reap
of the next sandbox that lands there). Measured choice: commands go through an actor rather
than straight to the node's Docker engine, because an actor works on any Ray cluster (no
engine socket exposed across machines): docs/benchmarks.md has what it costs per command.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from tqdm.auto import tqdm

from tbrl_lib.sandbox.backend import Capacity, EngineOutage, EngineUnavailable
from tbrl_lib.sandbox.backends.ray import cluster
from tbrl_lib.sandbox.backends.ray.host import reap_node
from tbrl_lib.sandbox.backends.ray.remote import RaySandbox
from tbrl_lib.sandbox.base import Sandbox, SandboxError
from tbrl_lib.sandbox.config import RaySettings, SandboxConfig
from tbrl_lib.tasks.model import Task

WAIT_EVERY_S = 2.0


class RayBackend:
    """The `ray` backend (see module docstring)."""

    name = "ray"

    def __init__(self, settings: RaySettings | None = None) -> None:
        self.settings = settings or RaySettings()

    def open(self, task: Task, config: SandboxConfig) -> AbstractAsyncContextManager[Sandbox]:
        return self._open(task, config)

    @asynccontextmanager
    async def _open(self, task: Task, config: SandboxConfig) -> AsyncIterator[Sandbox]:
        sandbox = RaySandbox(task, config)
        try:
            await sandbox.start()
            yield sandbox
        finally:
            await asyncio.shield(sandbox.close())

    async def prepare(self, task: Task) -> None:
        """Images are built on the node a sandbox lands on; here only: is there a node."""
        if not await asyncio.to_thread(cluster.sandbox_nodes, self.settings):
            raise SandboxError(self._no_nodes(), kind="no_capacity")

    async def wait(
        self, why: str, wait_s: float, who: str, resume: str, idle: bool = False
    ) -> bool:
        """False while some node offers sandbox units; else wait for one (a lost node's
        rollouts are rerun on the others at once, so only an empty cluster is an outage)."""
        if await asyncio.to_thread(cluster.sandbox_nodes, self.settings):
            return False
        tqdm.write(
            f"{who}: no Ray node offers `{self.settings.resource}` ({why}); waiting up to "
            f"{wait_s:.0f}s"
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while loop.time() < deadline:
            await asyncio.sleep(WAIT_EVERY_S)
            if await asyncio.to_thread(cluster.sandbox_nodes, self.settings):
                tqdm.write(f"{who}: a Ray node offers `{self.settings.resource}` again")
                return True
        raise EngineOutage(f"{self._no_nodes()} for {wait_s:.0f}s ({why}); {resume}")

    def reap(self, run_id: str | None = None) -> list[str]:
        """Dead owners' leftovers on every live sandbox node's engine (only `run_id`'s
        containers when given), removed by a task pinned to each node."""
        done = cluster.on_each_node(self.settings, reap_node, run_id)
        return [f"node {node['NodeID'][:8]}: removed {count}" for node, count in done]

    def check(self, purpose: str) -> str:
        try:
            capacity = self.capacity()
        except EngineUnavailable as err:
            raise EngineUnavailable(f"{purpose}: {err}") from err
        if not capacity.places:
            raise EngineUnavailable(f"{purpose}: {self._no_nodes()}")
        return f"ray: {len(capacity.places)} nodes, {capacity.total} sandbox units"

    def capacity(self) -> Capacity:
        return cluster.capacity(self.settings)

    async def close(self) -> None:
        """Nothing beyond open sandboxes: each gives its unit back when it closes."""

    def _no_nodes(self) -> str:
        return (
            f"no live Ray node declares the `{self.settings.resource}` resource; start workers "
            f"with `ray start --address HEAD --resources '{{\"{self.settings.resource}\": 8}}'`"
        )
