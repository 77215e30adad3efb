"""`RayBackend`: each rollout's sandbox placed by Ray on a node with a free `sandbox` unit.

Open = reserve one unit (`cluster.reserve`: Ray's scheduler picks the node, waiting while
the cluster is full, so the capacity is global across every process and job), then start a
`DockerSandbox` on that node through its host actor (`host.py`) and talk to it through a
`RaySandbox` (`remote.py`); close = remove the container, give the unit back. Images are
built on the node that needs them, when a sandbox first lands there (`prepare` only checks
that the cluster has somewhere to run).

A node lost mid-run: its rollouts' calls fail as `node_lost` (infrastructure: masked in
training, rerun in evaluation, on the nodes left); the unit is given back; the node's
containers are reaped by its host actor when the node (and its engine) come back, or by
`reap()`. Measured choice: commands go through the node's actor rather than straight to the
node's Docker engine, because the actor works on any Ray cluster (no engine socket exposed
across machines); it costs 1.4-2.3 ms more per command on a loaded 2-core machine, 6 ms at
twice that load (docs/benchmarks.md, 2026-12-06).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from tqdm.auto import tqdm

from tbrl_lib.sandbox.backend import Capacity, EngineOutage, EngineUnavailable
from tbrl_lib.sandbox.backends.ray import cluster
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
        try:
            unit = await cluster.reserve(self.settings)
        except TimeoutError as err:
            raise SandboxError(
                f"task {task.id}: no `{self.settings.resource}` unit of the Ray cluster came "
                f"free within {self.settings.placement_timeout_s:.0f}s (raise "
                "sandbox.ray.placement_timeout_s, or add nodes)",
                kind="no_capacity",
            ) from err
        sandbox = RaySandbox(task, config, unit)
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
        """Every live sandbox node's engine reaped by its host actor."""
        ray = cluster.connect(self.settings)
        nodes = cluster.sandbox_nodes(self.settings)
        hosts = [cluster.host_for(self.settings, n["NodeID"]) for n in nodes]
        counts = ray.get([h.reap.remote(run_id) for h in hosts], timeout=300)
        return [f"node {n['NodeID'][:8]}: removed {c}" for n, c in zip(nodes, counts, strict=True)]

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
