"""`SandboxHost`: the one Ray actor per node that owns that node's sandboxes.

It runs on the node Ray placed a rollout's `sandbox` unit on (pinned there, `num_cpus=0`,
named per node so every job in the namespace finds the same one) and serves many sandboxes
from one asyncio loop: each is a `DockerSandbox` on the node's own engine (`DOCKER_HOST` of
the node's `ray start`, else the local socket), so images are built, volumes made, limits
enforced and the verifier's isolated operations done where the container is, by the same
code as the `docker` backend. A rollout's calls arrive as actor method calls naming its
sandbox.

Leftovers: on start the actor reaps its engine (containers of dead owners: a previous actor
of this node that died with its raylet, a killed trainer's); a sandbox whose caller never
closes it (the driver died) is closed `ORPHAN_GRACE_S` after its wall clock; the backend's
`reap()` asks every live node's actor. Containers carry `tbrl.node` (the Ray node id)
besides the run's labels.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from tbrl_lib.sandbox.backends.docker import engine, reaper
from tbrl_lib.sandbox.backends.docker.container import DockerSandbox
from tbrl_lib.sandbox.backends.docker.images import ensure_image
from tbrl_lib.sandbox.base import CommandResult, ExecResult, SandboxClosed, SandboxStats
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

LABEL_NODE = "tbrl.node"
ORPHAN_GRACE_S = 60.0
"""A sandbox still open this long past its wall clock is closed by the actor (its caller is
gone: a driver that died cannot close it)."""
log = logging.getLogger(__name__)


class SandboxHost:
    """One node's sandboxes (see module docstring); made a Ray actor by `cluster.host_for`."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.sandboxes: dict[str, DockerSandbox] = {}
        self._ids = itertools.count(1)
        self.reaped = self.reap()

    def reap(self, run_id: str | None = None) -> int:
        """Remove this node's engine's leftovers of dead tbrl processes; how many."""
        client = engine.client()
        try:
            return reaper.reap(client).removed
        finally:
            client.close()

    def ping(self) -> dict:
        """Who answers here: node id, engine, sandboxes open now."""
        info = engine.ping()
        return {
            "node_id": self.node_id,
            "engine": f"{info.version} at {info.endpoint}" if info else None,
            "open": len(self.sandboxes),
        }

    async def prepare(self, task: Task) -> str:
        return await ensure_image(task)

    async def open(self, task: Task, config: SandboxConfig) -> tuple[str, dict]:
        """Start a sandbox; its id and what the caller's proxy needs to know about it."""
        sandbox = DockerSandbox(task, config, labels={LABEL_NODE: self.node_id})
        await sandbox.start()
        sid = f"{self.node_id[:8]}-{next(self._ids)}"
        self.sandboxes[sid] = sandbox
        loop = asyncio.get_running_loop()
        loop.call_later(sandbox.wall_clock_s + ORPHAN_GRACE_S, self._close_orphan, sid)
        return sid, {
            "runtime_dir": sandbox.runtime_dir,
            "workdir": sandbox.workdir,
            "startup_seconds": sandbox.stats.startup_seconds,
            "limits_applied": dict(sandbox.limits_applied),
            "container_id": sandbox.container_id,
        }

    def _get(self, sid: str) -> DockerSandbox:
        sandbox = self.sandboxes.get(sid)
        if sandbox is None:
            raise SandboxClosed(f"sandbox {sid} is not open on node {self.node_id[:8]}")
        return sandbox

    async def run(self, sid: str, cmd: str, timeout: float | None) -> CommandResult:
        return await self._get(sid).run(cmd, timeout)

    async def write_file(self, sid: str, path: str, content: bytes, mode: int) -> None:
        await self._get(sid).write_file(path, content, mode)

    async def read_file(self, sid: str, path: str, max_bytes: int | None) -> bytes:
        return await self._get(sid).read_file(path, max_bytes)

    async def exec_isolated(
        self, sid: str, argv: list[str], env: dict[str, str], timeout: float, user: str, wd: str
    ) -> ExecResult:
        return await self._get(sid).exec_isolated(
            argv, env=env, timeout=timeout, user=user, workdir=wd
        )

    async def put_archive(self, sid: str, path: str, tar: bytes) -> None:
        await self._get(sid).put_archive(path, tar)

    async def close(self, sid: str) -> SandboxStats | None:
        """Remove the sandbox's container; its stats (None when it was not open)."""
        sandbox = self.sandboxes.pop(sid, None)
        if sandbox is None:
            return None
        await asyncio.shield(sandbox.close())
        return sandbox.stats

    def _close_orphan(self, sid: str) -> None:
        if sid in self.sandboxes:
            log.warning("tbrl: closing sandbox %s: its caller never did (gone?)", sid)
            asyncio.ensure_future(self.close(sid))
