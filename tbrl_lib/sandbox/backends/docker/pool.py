"""Warm pools and `open_sandbox`, the one way callers get a sandbox.

`SandboxPool(task, size, config)` keeps `size` containers started (shell ready) for one
task, so a rollout's acquire is a hand-off from a queue, not a `docker run`; a
background task refills after every hand-off and the pool drains (removes every unused
container) on `close()`. The wall clock of a pooled sandbox starts at hand-off.

`open_sandbox(task, config)` is an async context manager yielding a `Sandbox`. With
`config.pool_size > 0` it uses a shared pool per (task, config), created on first use and
closed after `POOL_IDLE_S` without hand-offs (so a trainer walking over many tasks does
not keep idle containers for all of them); `prewarm(task, config)` fills it ahead of
time. Whatever the path, the container is removed when the `async with` block ends,
even on cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from tbrl_lib.sandbox.backends.docker.container import DockerSandbox
from tbrl_lib.sandbox.base import SandboxClosed, SandboxError
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

log = logging.getLogger(__name__)
POOL_IDLE_S = 120.0


class SandboxPool:
    """`size` ready containers for one task; `acquire()` hands one out and refills.

    Create it inside the event loop that will use it (it starts tasks on that loop)."""

    def __init__(self, task: Task, size: int, config: SandboxConfig | None = None) -> None:
        if size < 1:
            raise ValueError(f"pool size must be >= 1, got {size}")
        self.task = task
        self.size = size
        self.config = config or SandboxConfig()
        self._ready: asyncio.Queue[DockerSandbox] = asyncio.Queue()
        self._starting = 0
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self.last_used = asyncio.get_running_loop().time()
        self.errors: list[str] = []

    async def __aenter__(self) -> SandboxPool:
        self.fill()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def ready(self) -> int:
        return self._ready.qsize()

    def fill(self) -> None:
        """Start containers until ready + starting reaches `size` (non-blocking)."""
        while not self._closed and self._ready.qsize() + self._starting < self.size:
            self._starting += 1
            task = asyncio.ensure_future(self._start_one())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _start_one(self) -> None:
        sandbox = DockerSandbox(self.task, self.config)
        try:
            await sandbox.start()
        except Exception as err:  # noqa: BLE001 - surfaced via `errors` and wait_ready()
            self.errors.append(f"{type(err).__name__}: {err}")
            log.warning("tbrl: warm pool for %s could not start a container: %s", self.task.id, err)
            return
        finally:
            self._starting -= 1
        if self._closed:
            await sandbox.close()
        else:
            self._ready.put_nowait(sandbox)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait until the pool holds `size` ready containers (or raise with the reason)."""
        self.fill()
        deadline = asyncio.get_running_loop().time() + timeout
        while self._ready.qsize() < self.size:
            if self._starting == 0:
                self.fill()
                if self.errors:
                    raise SandboxError(
                        f"warm pool for {self.task.id} failed: {self.errors[-1]}",
                        kind="pool_failed",
                    )
            if asyncio.get_running_loop().time() > deadline:
                raise SandboxError(
                    f"warm pool for {self.task.id}: {self._ready.qsize()}/"
                    f"{self.size} ready after {timeout:.0f}s",
                    kind="pool_timeout",
                )
            await asyncio.sleep(0.02)

    async def acquire(self) -> DockerSandbox:
        """A ready sandbox (hand-off), or a freshly started one when the pool is empty."""
        if self._closed:
            raise SandboxClosed(f"warm pool for {self.task.id} is closed (close_pools() ran first)")
        self.last_used = asyncio.get_running_loop().time()
        try:
            sandbox = self._ready.get_nowait()
        except asyncio.QueueEmpty:
            sandbox = None
        self.fill()
        if sandbox is None:
            sandbox = DockerSandbox(self.task, self.config)
            await sandbox.start()
            return sandbox
        sandbox.arm_wall_clock()
        return sandbox

    async def close(self) -> None:
        """Drain: stop refilling and remove every container not handed out."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        while not self._ready.empty():
            await self._ready.get_nowait().close()


_POOLS: dict[tuple, SandboxPool] = {}


def _pool_key(task: Task, config: SandboxConfig) -> tuple:
    return (id(asyncio.get_running_loop()), task.content_hash(), config.model_dump_json())


def shared_pool(task: Task, config: SandboxConfig) -> SandboxPool:
    """The process-wide pool for (task, config), created and filling on first use."""
    key = _pool_key(task, config)
    pool = _POOLS.get(key)
    if pool is None or pool._closed:
        pool = _POOLS[key] = SandboxPool(task, config.pool_size, config)
        pool.fill()
        asyncio.ensure_future(_close_when_idle(key, pool))
    return pool


async def _close_when_idle(key: tuple, pool: SandboxPool) -> None:
    loop = asyncio.get_running_loop()
    while not pool._closed:
        await asyncio.sleep(min(POOL_IDLE_S, 5.0))
        if loop.time() - pool.last_used > POOL_IDLE_S:
            if _POOLS.get(key) is pool:
                del _POOLS[key]
            await pool.close()


async def prewarm(task: Task, config: SandboxConfig, timeout: float = 120.0) -> None:
    """Fill the shared pool for `task` and wait until it is ready."""
    if config.pool_size < 1:
        raise ValueError("prewarm needs SandboxConfig(pool_size >= 1)")
    await shared_pool(task, config).wait_ready(timeout)


async def close_pools() -> None:
    """Drain every shared pool (call at the end of a run; atexit removes leftovers anyway)."""
    pools = list(_POOLS.values())
    _POOLS.clear()
    await asyncio.gather(*(p.close() for p in pools), return_exceptions=True)


@contextlib.asynccontextmanager
async def open_sandbox(
    task: Task, config: SandboxConfig | None = None, pool: SandboxPool | None = None
) -> AsyncIterator[DockerSandbox]:
    """`async with open_sandbox(task) as sb:` one rollout's sandbox, removed at the end."""
    config = config or SandboxConfig()
    if pool is None and config.pool_size > 0:
        pool = shared_pool(task, config)
    if pool is not None:
        sandbox = await pool.acquire()
    else:
        sandbox = DockerSandbox(task, config)
        await sandbox.start()
    try:
        yield sandbox
    finally:
        await asyncio.shield(sandbox.close())
