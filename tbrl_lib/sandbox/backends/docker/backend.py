"""`DockerBackend`: sandboxes as containers on the Docker engines this process talks to.

The engines are `SandboxConfig.docker.hosts` (default: `DOCKER_HOST`, else the local
socket); each host's `max_concurrency` is counted across this machine's processes with
file-lock slots (`slots.py`), so the capacity is per machine: several nodes that share one
declared host each count it whole (preflight says so). The `ray` backend runs this same
code on each node of a cluster, where Ray counts the capacity globally.

Kept, beside Ray: one trainer whose sandboxes run on a Docker engine that runs no Ray (a
sandbox box reached over `ssh://` or `tcp://`), and the single-machine default.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager

from docker.errors import DockerException
from tqdm.auto import tqdm

from tbrl_lib.sandbox.backend import Capacity, EngineUnavailable, Place
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

    @property
    def urls(self) -> list[str | None]:
        return [h.base_url for h in self.settings.hosts]

    def open(self, task: Task, config: SandboxConfig) -> AbstractAsyncContextManager[Sandbox]:
        return open_sandbox(task, config)

    async def prepare(self, task: Task) -> None:
        """Build (or find) the image on every declared engine (a rollout may land on any)."""
        await asyncio.gather(*(ensure_image(task, h) for h in self.settings.hosts))

    async def wait(
        self, why: str, wait_s: float, who: str, resume: str, idle: bool = False
    ) -> bool:
        waited = False
        for url in dict.fromkeys(self.urls):
            waited |= await engine.wait_for_engine(why, wait_s, who, resume, base_url=url)
        if waited and idle:
            for url in dict.fromkeys(self.urls):
                stranded = await asyncio.to_thread(_reap_stranded, url, who)
                if stranded:
                    tqdm.write(f"{who}: removed {len(stranded)} containers the outage stranded")
        return waited

    def reap(self, run_id: str | None = None) -> list[str]:
        """Dead processes' leftovers on every declared engine (only `run_id`'s containers when
        given)."""
        lines = []
        for url in dict.fromkeys(self.urls):
            report = reaper.reap(engine.client(url), run_id=run_id)
            lines.append(f"{url or 'default'}: removed {report.removed}")
        return lines

    def check(self, purpose: str) -> str:
        missing = [url for url in dict.fromkeys(self.urls) if engine.ping(url) is None]
        if missing == [None]:
            engine.require_engine(purpose)
        if missing:
            raise EngineUnavailable(
                f"{purpose} needs the Docker engines of sandbox.docker.hosts; "
                f"{', '.join(str(m) for m in missing)} do not answer: start them, or drop them "
                "from sandbox.docker.hosts"
            )
        return ", ".join(f"docker at {get_host(h).name}" for h in self.settings.hosts)

    def capacity(self) -> Capacity:
        places = tuple(
            Place(get_host(h).name, h.max_concurrency, h.max_concurrency - get_host(h).slots.held())
            for h in self.settings.hosts
        )
        return Capacity(self.name, places, shared=False)

    async def close(self) -> None:
        await close_pools()


def _reap_stranded(base_url: str | None, who: str) -> list[str]:
    """`reaper.reap_stranded` on one engine; one that fails again leaves them to the reaper."""
    try:
        docker_client = engine.client(base_url)
        try:
            return reaper.reap_stranded(docker_client)
        finally:
            docker_client.close()
    except (DockerException, OSError) as err:
        tqdm.write(f"{who}: could not remove the containers the outage stranded yet: {err}")
        return []
