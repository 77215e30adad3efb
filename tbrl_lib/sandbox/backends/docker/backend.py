"""`DockerBackend`: sandboxes as containers on this machine's Docker engine.

The engine is `DOCKER_HOST`, else the local socket; `docker.max_concurrency` is counted
across this machine's processes with file-lock slots (`slots.py`), so the capacity is per
machine. Sandboxes across machines go through the `ray` backend, which runs this same code on
each node of a cluster, where Ray counts the capacity globally.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager

from docker.errors import DockerException
from tqdm.auto import tqdm

from tbrl_lib.sandbox.backend import Capacity, Place
from tbrl_lib.sandbox.backends.docker import engine, reaper
from tbrl_lib.sandbox.backends.docker.hosts import get_host
from tbrl_lib.sandbox.backends.docker.images import ensure_image
from tbrl_lib.sandbox.backends.docker.pool import close_pools, open_sandbox
from tbrl_lib.sandbox.base import Sandbox
from tbrl_lib.sandbox.config import DockerSettings, SandboxConfig
from tbrl_lib.tasks.model import Task


class DockerBackend:
    """The `docker` backend (see module docstring)."""

    name = "docker"

    def __init__(self, settings: DockerSettings | None = None) -> None:
        self.settings = settings or DockerSettings()
        self.host = self.settings.hosts[0]

    def open(self, task: Task, config: SandboxConfig) -> AbstractAsyncContextManager[Sandbox]:
        return open_sandbox(task, config)

    async def prepare(self, task: Task) -> None:
        """Build (or find) the task's image on the engine."""
        await ensure_image(task, self.host)

    async def wait(
        self, why: str, wait_s: float, who: str, resume: str, idle: bool = False
    ) -> bool:
        waited = await engine.wait_for_engine(why, wait_s, who, resume)
        if waited and idle:
            stranded = await asyncio.to_thread(_reap_stranded, who)
            if stranded:
                tqdm.write(f"{who}: removed {len(stranded)} containers the outage stranded")
        return waited

    def reap(self, run_id: str | None = None) -> list[str]:
        """Dead processes' leftovers on the engine (only `run_id`'s containers when given)."""
        client = engine.client()
        try:
            return [f"default: removed {reaper.reap(client, run_id=run_id).removed}"]
        finally:
            client.close()

    def check(self, purpose: str) -> str:
        info = engine.require_engine(purpose)
        return f"docker {info.version} at {info.endpoint}"

    def capacity(self) -> Capacity:
        host = get_host(self.host)
        cap = self.host.max_concurrency
        return Capacity(self.name, (Place(host.name, cap, cap - host.slots.held()),), shared=False)

    async def close(self) -> None:
        await close_pools()


def _reap_stranded(who: str) -> list[str]:
    """`reaper.reap_stranded` on the engine; one that fails again leaves them to the reaper."""
    try:
        docker_client = engine.client()
        try:
            return reaper.reap_stranded(docker_client)
        finally:
            docker_client.close()
    except (DockerException, OSError) as err:
        tqdm.write(f"{who}: could not remove the containers the outage stranded yet: {err}")
        return []
