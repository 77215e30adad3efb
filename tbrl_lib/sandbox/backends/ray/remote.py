"""`RaySandbox`: the caller's side of a sandbox that lives on a cluster node.

Every `Sandbox` call becomes one call of the node's `SandboxHost` actor naming the sandbox;
the answer (a `CommandResult`, bytes, an `ExecResult`) comes back as it is, and an error
raised there is raised here as itself (a `SandboxError` keeps its kind, so blame is decided
on the node, by the `docker` backend's rules). A node that dies (its raylet, its machine) or
stops answering within a call's limit makes the call a `SandboxError` of kind `node_lost`:
infrastructure, masked in training and rerun in evaluation.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tbrl_lib.sandbox.backends.ray.cluster import Unit, forget_host, host_for, ray_module
from tbrl_lib.sandbox.base import CommandResult, ExecResult, SandboxError, SandboxStats
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

CALL_MARGIN_S = 60.0
"""A call may take its own limit plus this before the node counts as lost."""


class RaySandbox:
    """A `Sandbox` on a cluster node, reached through that node's host actor."""

    def __init__(self, task: Task, config: SandboxConfig, unit: Unit) -> None:
        self.task, self.config, self.unit = task, config, unit
        self.host = host_for(config.ray, unit.node_id)
        self.stats = SandboxStats()
        self.sid: str | None = None
        self.runtime_dir = ""
        self.workdir = config.workdir
        self.limits_applied: dict[str, str] = {}

    @property
    def node_id(self) -> str:
        return self.unit.node_id

    async def _call(self, method: str, *args: Any, limit: float) -> Any:
        ray = ray_module()
        ref = getattr(self.host, method).remote(*args)
        try:
            return await asyncio.wait_for(ref, limit + CALL_MARGIN_S)
        except ray.exceptions.RayTaskError as err:
            cause = err.cause if isinstance(err.cause, Exception) else None
            if cause is None:
                raise
            raise cause from None
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as err:
            forget_host(self.config.ray, self.node_id)
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
        wall = self.config.wall_clock_s or 0.0
        self.sid, info = await self._call(
            "open", self.task, self.config, limit=self.config.start_timeout_s + wall
        )
        self.runtime_dir, self.workdir = info["runtime_dir"], info["workdir"]
        self.stats.startup_seconds = info["startup_seconds"]
        self.limits_applied = info["limits_applied"]

    async def close(self) -> None:
        """Remove the container on its node and give the unit back (idempotent)."""
        sid, self.sid = self.sid, None
        try:
            if sid is not None:
                stats = await self._call("close", sid, limit=self.config.start_timeout_s)
                if stats is not None:
                    self.stats.extra.update(stats.extra)
        except SandboxError:
            pass  # the node is gone: its actor's reap removes the container when it is back
        finally:
            self.unit.release()

    async def __aenter__(self) -> RaySandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ the Sandbox calls
    async def run(self, cmd: str, timeout: float | None = None) -> CommandResult:
        limit = timeout if timeout is not None else self.config.command_timeout_s
        result = await self._call("run", self.sid, cmd, timeout, limit=limit)
        self.stats.commands += 1
        self.stats.command_seconds += result.duration_s
        self.stats.bytes_out += len(result.output)
        return result

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        data = content.encode() if isinstance(content, str) else bytes(content)
        await self._call("write_file", self.sid, path, data, mode, limit=self._io_limit)
        self.stats.bytes_written += len(data)

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        data = await self._call("read_file", self.sid, path, max_bytes, limit=self._io_limit)
        self.stats.bytes_read += len(data)
        return data

    async def exec_isolated(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        timeout: float,
        user: str = "0:0",
        workdir: str = "/",
    ) -> ExecResult:
        return await self._call(
            "exec_isolated", self.sid, argv, env, timeout, user, workdir, limit=timeout
        )

    async def put_archive(self, path: str, tar: bytes) -> None:
        await self._call("put_archive", self.sid, path, tar, limit=self._io_limit)
        self.stats.bytes_written += len(tar)

    @property
    def _io_limit(self) -> float:
        return self.config.command_timeout_s
