"""`RaySandbox`: the caller's side of a sandbox that lives on a cluster node.

It runs in an actor of its own (`host.SandboxActor`), which holds one `sandbox` unit: a new
one is spawned, and waiting for it to answer is waiting for a free unit (up to
`RaySettings.placement_timeout_s`, then a `no_capacity` infra error), or the backend hands
over one a finished sandbox of this process left idle (`IdleActors`). Every `Sandbox` call
becomes one call of that actor; the answer (a `CommandResult`, bytes, an `ExecResult`) comes
back as it is, and an error raised there is raised here as itself (a `SandboxError` keeps its
kind, so blame is decided on the node, by the `docker` backend's rules). An actor that dies
(its node, its raylet) or stops answering within a call's limit makes the call a
`SandboxError` of kind `node_lost`: infrastructure, masked in training and rerun in
evaluation. Closing removes the container; the backend then keeps the actor idle for a
moment or ends it, which frees the unit.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tbrl_lib.sandbox.backends.ray.cluster import ray_module, spawn
from tbrl_lib.sandbox.backends.ray.host import SandboxActor
from tbrl_lib.sandbox.base import (
    CommandResult,
    ExecResult,
    IsolatedCommand,
    SandboxError,
    SandboxStats,
)
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

CALL_MARGIN_S = 60.0
"""A call may take its own limit plus this before the node counts as lost."""


class RaySandbox:
    """A `Sandbox` on a cluster node, reached through its own actor there."""

    def __init__(
        self, task: Task, config: SandboxConfig, actor: Any = None, node_id: str = ""
    ) -> None:
        self.task, self.config = task, config
        self.actor, self.node_id = actor, node_id
        """A placed actor to reuse (idle, its unit held), or None: spawn one."""
        self.stats = SandboxStats()
        self.runtime_dir = ""
        self.workdir = config.workdir
        self.limits_applied: dict[str, str] = {}
        self.open = False

    async def _call(self, method: str, *args: Any, limit: float) -> Any:
        ray = ray_module()
        ref = getattr(self.actor, method).remote(*args)
        try:
            return await asyncio.wait_for(ref, limit + CALL_MARGIN_S)
        except ray.exceptions.RayTaskError as err:
            cause = err.cause if isinstance(err.cause, Exception) else None
            if cause is None:
                raise
            raise cause from None
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as err:
            raise self._lost(method, err) from err
        except TimeoutError as err:
            ray.cancel(ref)
            raise self._lost(method, f"no answer within {limit + CALL_MARGIN_S:.0f}s") from err

    def _lost(self, method: str, why: object) -> SandboxError:
        return SandboxError(
            f"task {self.task.id}: cluster node {self.node_id[:8]} lost during {method}: "
            f"{str(why).splitlines()[0] if str(why) else type(why).__name__}",
            kind="node_lost",
        )

    async def start(self) -> None:
        """Wait for a unit (a new actor placed), then start the container on its node."""
        if self.actor is None:
            await self._place()
        self.stats.place = self.node_id
        wall = self.config.wall_clock_s or 0.0
        self.open = True
        info = await self._call(
            "open", self.task, self.config, limit=self.config.start_timeout_s + wall
        )
        self.runtime_dir, self.workdir = info["runtime_dir"], info["workdir"]
        self.stats.startup_seconds = info["startup_seconds"]
        self.limits_applied = info["limits_applied"]

    async def _place(self) -> None:
        ray, ray_settings = ray_module(), self.config.ray
        self.actor = spawn(SandboxActor, ray_settings)
        try:
            self.node_id = await asyncio.wait_for(
                self.actor.node.remote(), ray_settings.placement_timeout_s
            )
        except TimeoutError as err:
            raise SandboxError(
                f"task {self.task.id}: no `{ray_settings.resource}` unit of the Ray cluster came "
                f"free within {ray_settings.placement_timeout_s:.0f}s (raise "
                "sandbox.ray.placement_timeout_s, or add nodes)",
                kind="no_capacity",
            ) from err
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as err:
            raise self._lost("placement", err) from err

    async def close(self) -> bool:
        """Remove the container on its node (idempotent); whether the actor is fit for
        another sandbox (False: it, or its node, is gone, or it never opened one)."""
        if not self.open:
            return False
        self.open = False
        try:
            stats = await self._call("close", limit=self.config.start_timeout_s)
        except SandboxError:
            return False  # the node is gone: its containers are reaped when it is back
        if stats is not None:
            self.stats.extra.update(stats.extra)
        return True

    # ------------------------------------------------------------------ the Sandbox calls
    async def run(self, cmd: str, timeout: float | None = None) -> CommandResult:
        limit = timeout if timeout is not None else self.config.command_timeout_s
        result = await self._call("run", cmd, timeout, limit=limit)
        self.stats.commands += 1
        self.stats.command_seconds += result.duration_s
        self.stats.bytes_out += len(result.output)
        return result

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        data = content.encode() if isinstance(content, str) else bytes(content)
        await self._call("write_file", path, data, mode, limit=self._io_limit)
        self.stats.bytes_written += len(data)

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        data = await self._call("read_file", path, max_bytes, limit=self._io_limit)
        self.stats.bytes_read += len(data)
        return data

    async def exec_isolated(self, command: IsolatedCommand) -> ExecResult:
        return await self._call("exec_isolated", command, limit=command.timeout)

    async def put_archive(self, path: str, tar: bytes) -> None:
        await self._call("put_archive", path, tar, limit=self._io_limit)
        self.stats.bytes_written += len(tar)

    @property
    def _io_limit(self) -> float:
        return self.config.command_timeout_s
