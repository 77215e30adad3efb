"""`DockerBackend`: sandboxes as containers on this machine's Docker engine.

The engine is `DOCKER_HOST`, else the local socket; `docker.max_concurrency` is counted
across this machine's processes with file-lock slots (`slots.py`), so the capacity is per
machine. Sandboxes across machines go through the `ray` backend, which runs this same code on
each node of a cluster, where Ray counts the capacity globally.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import AbstractAsyncContextManager

from docker.errors import DockerException
from tqdm.auto import tqdm

from tbrl_lib.docker import engine, reaper
from tbrl_lib.engines import EngineUnavailable
from tbrl_lib.sandbox.backend import Capacity, Demand, Finding, Place
from tbrl_lib.sandbox.backends.docker import pristine_volume
from tbrl_lib.sandbox.backends.docker.hosts import get_host
from tbrl_lib.sandbox.backends.docker.images import ensure_image
from tbrl_lib.sandbox.backends.docker.pool import close_pools, open_sandbox
from tbrl_lib.sandbox.base import Sandbox
from tbrl_lib.sandbox.config import DockerSettings, SandboxConfig
from tbrl_lib.tasks.model import Task

ASK_TIMEOUT_S = 5.0
"""How long preflight waits for the engine's answer (a hung engine costs this at most)."""
SANDBOX_WORKING_SET_MB = 256
"""Memory one running sandbox is planned to use (a shell, the agent's commands, a test run);
the task's `memory_mb` limit (2 GB by default) is a cap, not a reservation."""


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

    def prune_caches(self) -> list[str]:
        """The verifier's pristine copies of images no container mounts (~95 MB each)."""
        client = engine.client()
        try:
            removed, in_use = pristine_volume.prune(client)
        finally:
            client.close()
        return [f"default: removed {len(removed)} pristine volumes; kept {in_use} in use"]

    def check(self, purpose: str) -> str:
        info = engine.require_engine(purpose)
        return f"docker {info.version} at {info.endpoint}"

    def preflight(self, demand: Demand) -> list[str]:
        """The engine does not answer, or this node's sandboxes in flight exceed its memory
        (the engine is the node's own: `demand.per_node` processes count)."""
        memory = _engine_memory()
        if memory is None:
            try:
                engine.require_engine("the sandboxes")  # its message says how to start one
            except EngineUnavailable as exc:
                return [str(exc)]
        in_flight = demand.per_process * demand.per_node
        need_gb = in_flight * SANDBOX_WORKING_SET_MB / 1024
        have_gb = (memory or 0) / 2**30
        if need_gb <= have_gb:
            return []
        return [
            f"{in_flight} sandboxes in flight ({demand.per_process} x {demand.per_node} "
            f"process(es)) need ~{need_gb:.0f} GB at {SANDBOX_WORKING_SET_MB} MB each; the "
            f"Docker engine has {have_gb:.0f} GB: lower launch.sandbox_concurrency, or place "
            "sandboxes on several machines with rollout.sandbox.backend=ray"
        ]

    def doctor(self) -> list[Finding]:
        info = engine.ping()
        if info is None:
            fix = "disables sandboxes, validation, evaluation and training; " + engine.how_to_fix()
            return [Finding("docker engine", False, "no engine answers", fix, required=True)]
        return [Finding("docker engine", True, f"{info.version} at {info.endpoint}")]

    def capacity(self) -> Capacity:
        host = get_host(self.host)
        cap = self.host.max_concurrency
        return Capacity(self.name, (Place(host.name, cap, cap - host.slots.held()),), shared=False)

    async def close(self) -> None:
        await close_pools()


def _engine_memory() -> int | None:
    """The engine's total memory in bytes, or None when it does not answer within
    `ASK_TIMEOUT_S` (asked on a daemon thread: a hung engine cannot hold preflight)."""
    answer: list[int] = []

    def ask() -> None:
        try:
            client = engine.client(timeout=int(ASK_TIMEOUT_S))
            answer.append(int(client.info().get("MemTotal", 0)))
            client.close()
        except Exception:  # noqa: BLE001 - any failure means: does not answer
            pass

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(ASK_TIMEOUT_S + 1)
    return answer[0] if answer else None


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
