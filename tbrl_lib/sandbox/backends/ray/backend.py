"""`RayBackend`: each rollout's sandbox placed by Ray on a node with a free `sandbox` unit.

Open = a sandbox actor (`host.SandboxActor`), which holds one `sandbox` unit: a new one is
spawned, and Ray's scheduler picks its node, keeping it pending while the cluster is full, so
the capacity is global across every process and job; the actor starts a `DockerSandbox` on
its node and the caller talks to it through a `RaySandbox` (`remote.py`); close = remove the
container. The actor then waits idle, its unit still held, for this process's next rollout
(`IdleActors`, up to `sandbox.ray.keep_idle_s`), and is ended after that, when Ray frees the
unit: an actor is a process on its node, whose start costs 1-3 s on a loaded 2-core machine,
so back-to-back rollouts (a step's, an evaluation's) reuse it. Images are built on the node
that needs them, when a sandbox first lands there (`prepare` only checks that the cluster has
somewhere to run).

A node lost mid-run takes its actors with it: Ray frees their units, their rollouts' calls
fail as `node_lost` (infrastructure: masked in training, rerun in evaluation, on the nodes
left), and the node's containers are reaped when it is back (`reap()`, or the automatic reap
of the next sandbox that lands there). Measured choice: commands go through an actor rather
than straight to the node's Docker engine, because an actor works on any Ray cluster (no
engine socket exposed across machines): docs/benchmarks.md has what it costs per command.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from tqdm.auto import tqdm

from tbrl_lib.engines import EngineOutage, EngineUnavailable
from tbrl_lib.sandbox.backend import Capacity, Demand, Finding, shared_capacity_problems
from tbrl_lib.sandbox.backends.ray import cluster
from tbrl_lib.sandbox.backends.ray.host import prune_node_caches, reap_node
from tbrl_lib.sandbox.backends.ray.remote import RaySandbox
from tbrl_lib.sandbox.base import Sandbox, SandboxError
from tbrl_lib.sandbox.config import RaySettings, SandboxConfig
from tbrl_lib.tasks.model import Task

WAIT_EVERY_S = 2.0
LOST_WAIT_S = 90.0
"""How long an open that found its node lost waits for Ray to count the node dead (its
heartbeats are missed for about 15-30 s) before it places a new actor."""
PLACE_TRIES = 4
"""Actors one open may try when each finds its node lost (see `_after_lost`)."""


class IdleActors:
    """Sandbox actors this process finished with, each holding its unit for `keep_s` more
    seconds in case another rollout of this process needs one (the newest first); a timer
    thread ends each after that (the event loops of training steps come and go)."""

    def __init__(self, keep_s: float) -> None:
        self.keep_s = keep_s
        self._idle: list[tuple[Any, str, threading.Timer]] = []
        self._lock = threading.Lock()

    def put(self, actor: Any, node_id: str) -> None:
        if self.keep_s <= 0:
            cluster.end(actor)
            return
        timer = threading.Timer(self.keep_s, self._expire, (actor,))
        timer.daemon = True
        with self._lock:
            self._idle.append((actor, node_id, timer))
        timer.start()

    def take(self) -> tuple[Any, str] | tuple[()]:
        """(actor, node id) to reuse, or () when none is idle."""
        with self._lock:
            if not self._idle:
                return ()
            actor, node_id, timer = self._idle.pop()
        timer.cancel()
        return actor, node_id

    def forget(self, node_id: str) -> None:
        """End the idle actors of a node that went (their calls would fail)."""
        with self._lock:
            gone = [entry for entry in self._idle if entry[1] == node_id]
            self._idle = [entry for entry in self._idle if entry[1] != node_id]
        for actor, _, timer in gone:
            timer.cancel()
            cluster.end(actor)

    def _expire(self, actor: Any) -> None:
        with self._lock:
            found = [entry for entry in self._idle if entry[0] is actor]
            self._idle = [entry for entry in self._idle if entry[0] is not actor]
        if found:
            cluster.end(actor)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for actor, _, timer in idle:
            timer.cancel()
            cluster.end(actor)


class RayBackend:
    """The `ray` backend (see module docstring)."""

    name = "ray"

    def __init__(self, settings: RaySettings | None = None) -> None:
        self.settings = settings or RaySettings()
        self.idle = IdleActors(self.settings.keep_idle_s)

    def open(self, task: Task, config: SandboxConfig) -> AbstractAsyncContextManager[Sandbox]:
        return self._open(task, config)

    @asynccontextmanager
    async def _open(self, task: Task, config: SandboxConfig) -> AsyncIterator[Sandbox]:
        sandbox = RaySandbox(task, config, *self.idle.take())
        try:
            for attempt in range(PLACE_TRIES):
                try:
                    await sandbox.start()
                    break
                except SandboxError as err:
                    if err.kind != "node_lost" or attempt == PLACE_TRIES - 1:
                        raise
                    sandbox = await self._after_lost(sandbox, task, config)
            yield sandbox
        finally:
            self._done(sandbox, fit=await asyncio.shield(sandbox.close()))

    async def _after_lost(
        self, sandbox: RaySandbox, task: Task, config: SandboxConfig
    ) -> RaySandbox:
        """A new sandbox once its node is gone from Ray's view: an idle actor's node, or one
        Ray placed a new actor on before it counted the node dead (the node's heartbeats are
        missed for 15-30 s), after which nothing lands there."""
        lost = sandbox.node_id
        self._done(sandbox, fit=False)
        if lost:
            self.idle.forget(lost)
            await asyncio.to_thread(cluster.wait_until_dead, self.settings, lost, LOST_WAIT_S)
        else:
            await asyncio.sleep(LOST_WAIT_S / PLACE_TRIES)
        return RaySandbox(task, config)

    def _done(self, sandbox: RaySandbox, fit: bool) -> None:
        """Keep a closed sandbox's actor idle for the next rollout, or end it."""
        if sandbox.actor is None:
            return
        if fit:
            self.idle.put(sandbox.actor, sandbox.node_id)
        else:
            cluster.end(sandbox.actor)
        sandbox.actor = None

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

    def prune_caches(self) -> list[str]:
        done = cluster.on_each_node(self.settings, prune_node_caches)
        return [f"node {node['NodeID'][:8]}: removed {n} pristine volumes" for node, n in done]

    def preflight(self, demand: Demand) -> list[str]:
        """The cluster does not answer, or the job's sandboxes in flight exceed its units (one
        pool for the whole job). A cluster named nowhere is not started to be asked: one
        process makes its own when it runs (`ray.init()`), several need the job's."""
        if not (self.settings.address or os.environ.get("RAY_ADDRESS")):
            if demand.processes == 1:
                return []
            return [
                f"{demand.processes} processes place sandboxes on a Ray cluster, and "
                "RAY_ADDRESS is not set: the job starts one (sbatch job.sbatch, or notebook 04 "
                "inside an allocation), or start one and set RAY_ADDRESS"
            ]
        try:
            self.check("the sandboxes")
            capacity = self.capacity()
        except EngineUnavailable as exc:
            return [str(exc)]
        return shared_capacity_problems(capacity, demand)

    def doctor(self) -> list[Finding]:
        """The cluster `RAY_ADDRESS` (or `ray.address`) names: its sandbox nodes, their units
        and how many are free (nothing to ask when neither is set)."""
        address = self.settings.address or os.environ.get("RAY_ADDRESS")
        if not address:
            return [Finding("ray cluster", True, "RAY_ADDRESS not set (sandbox.backend=docker)")]
        unit = self.settings.resource
        try:
            capacity = self.capacity()
        except Exception as err:  # noqa: BLE001 - a doctor reports, it does not crash
            fix = (
                "disables sandbox.backend=ray; check `ray status` on the head, or unset RAY_ADDRESS"
            )
            return [Finding("ray cluster", False, f"{address}: {err}", fix)]
        if not capacity.places:
            fix = (
                f"disables sandbox.backend=ray; start workers with --resources '{{\"{unit}\": 8}}'"
            )
            return [Finding("ray cluster", False, f"{address}: no node declares `{unit}`", fix)]
        found = f"{address}: {len(capacity.places)} sandbox nodes, " + "; ".join(capacity.notes)
        rows = [Finding("ray cluster", True, found)]
        for place in capacity.places:
            free = "?" if place.free is None else str(place.free)
            rows.append(
                Finding(f"ray node {place.name}", True, f"{unit} {free} free of {place.capacity}")
            )
        return rows

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
        """End the idle actors now (their units are freed)."""
        self.idle.close()

    def _no_nodes(self) -> str:
        return (
            f"no live Ray node declares the `{self.settings.resource}` resource; start workers "
            f"with `ray start --address HEAD --resources '{{\"{self.settings.resource}\": 8}}'`"
        )
