"""Docker hosts: one client and one slot count per engine, least-loaded placement.

Blocking Docker SDK calls (create, start, remove, build, archive transfers) run on a
dedicated thread pool sized for hundreds of rollouts; the long-lived shell sockets do not
use threads at all (see `shell.py`). Each host has a concurrency limit, shared by every
process on this machine (`slots.SlotFiles`: one `flock`-ed file per slot, given back by the
kernel when a process dies); `acquire_slot` picks the host with the lowest load ratio in
this process that has a free slot, and waits (asyncio, no thread) when every host is full:
woken at once by a release in this process, and every `SLOT_POLL_S` for one in another.
Hosts are shared per process: one `Host` per base_url.

Left out: health-based eviction of a failing host (a dead host raises `SandboxError`
with kind `daemon_unreachable` on use; evaluation and training then wait for it, bounded,
and rerun or stop resumably: `engine.wait_for_engine`).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import docker
from docker.errors import DockerException
from requests.exceptions import ConnectionError as RequestsConnectionError

from tbrl_lib.sandbox.backends.docker.slots import Slot, SlotFiles
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.sandbox.config import DockerHost

T = TypeVar("T")

_EXECUTOR = ThreadPoolExecutor(max_workers=96, thread_name_prefix="tbrl-docker")
"""Blocking SDK calls only; idle rollouts hold no thread."""
SLOT_POLL_S = 0.25
"""How often a process with waiting rollouts looks for a slot another process gave back
(one scan of a full host's slot files per interval, however many rollouts wait)."""


class Host:
    """One Docker engine: a client, its slot count and what it is known to support."""

    def __init__(self, spec: DockerHost) -> None:
        self.spec = spec
        self.base_url = spec.base_url
        self.active = 0
        """Slots this process holds on the host."""
        self.storage_opt_supported: bool | None = None
        self._slots: SlotFiles | None = None
        self._held: list[Slot] = []
        self._full_until = 0.0
        self._client: docker.DockerClient | None = None
        self._connection = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.base_url or "default"

    @property
    def engine_key(self) -> tuple[str, int]:
        """What caches of the engine's volumes key on: its address and this connection to it
        (`close` starts another; the address may lead to another engine since, as a changed
        `DOCKER_HOST` does)."""
        return (self.name, self._connection)

    @property
    def client(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None:
                kwargs: dict[str, Any] = {"timeout": 120, "max_pool_size": 128}
                if self.base_url:
                    self._client = docker.DockerClient(base_url=self.base_url, **kwargs)
                else:
                    self._client = docker.from_env(**kwargs)
            return self._client

    @property
    def load(self) -> float:
        return self.active / self.spec.max_concurrency

    @property
    def slots(self) -> SlotFiles:
        """The host's slot files, shared with the node's other processes."""
        capacity = self.spec.max_concurrency
        if self._slots is None or self._slots.capacity != capacity:
            self._slots = SlotFiles(self.base_url, capacity)
        return self._slots

    def take_slot(self) -> bool:
        """Take one of the host's shared slots; False when all are held (by any process).
        A full host is scanned again only after `SLOT_POLL_S`, or a release here."""
        if self.active >= self.spec.max_concurrency or time.monotonic() < self._full_until:
            return False
        slot = self.slots.take()
        if slot is None:
            self._full_until = time.monotonic() + SLOT_POLL_S
            return False
        self._held.append(slot)
        self.active += 1
        return True

    def give_slot_back(self) -> None:
        """Give back one slot this process holds (all of a host's slots are alike)."""
        if self._held:
            slot = self._held.pop()
            (self._slots or self.slots).give_back(slot)
        self.active = max(0, self.active - 1)
        self._full_until = 0.0

    async def call(
        self, fn: Callable[..., T], *args: Any, what: str = "docker call", **kwargs: Any
    ) -> T:
        """Run a blocking SDK call on the docker thread pool; map connection loss to SandboxError."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(_EXECUTOR, functools.partial(fn, *args, **kwargs))
        except (RequestsConnectionError, ConnectionError) as err:
            raise SandboxError(
                f"docker host {self.name} unreachable during {what}: {err}",
                kind="daemon_unreachable",
            ) from err
        except DockerException as err:
            if "is not running" in str(err) or "is paused" in str(err):
                raise SandboxError(
                    f"container stopped during {what}: {err}", kind="container_died"
                ) from err
            if _looks_unreachable(err):
                raise SandboxError(
                    f"docker host {self.name} unreachable during {what}: {err}",
                    kind="daemon_unreachable",
                ) from err
            raise

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
            self._connection += 1
            self.storage_opt_supported = None


def _looks_unreachable(err: Exception) -> bool:
    text = str(err)
    return any(
        s in text
        for s in (
            "Connection refused",
            "Connection aborted",
            "No such file",
            "Error while fetching server API version",
        )
    )


_HOSTS: dict[str | None, Host] = {}
_SLOT_FREED: asyncio.Event | None = None
_REGISTRY_LOCK = threading.Lock()


def get_host(spec: DockerHost) -> Host:
    """The process-wide `Host` for this base_url (limits taken from the first spec seen)."""
    with _REGISTRY_LOCK:
        host = _HOSTS.get(spec.base_url)
        if host is None:
            host = _HOSTS[spec.base_url] = Host(spec)
        elif host.spec.max_concurrency != spec.max_concurrency:
            host.spec = spec
        return host


def all_hosts() -> list[Host]:
    with _REGISTRY_LOCK:
        return list(_HOSTS.values())


class _SlotWaiters:
    """Wakes rollouts waiting for a free slot on any host (one per event loop)."""

    def __init__(self) -> None:
        self.cond: asyncio.Condition | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self.cond is None or self.loop is not loop:
            self.cond, self.loop = asyncio.Condition(), loop
        return self.cond


_WAITERS = _SlotWaiters()


async def acquire_slot(specs: tuple[DockerHost, ...], timeout: float) -> Host:
    """Reserve a slot on the least-loaded host; wait up to `timeout` seconds for one."""
    hosts = [get_host(s) for s in specs]
    cond = _WAITERS.get()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout

    def pick() -> Host | None:
        for host in sorted(hosts, key=lambda h: (h.load, h.active)):
            if host.take_slot():
                return host
        return None

    async with cond:
        while (chosen := pick()) is None:
            left = deadline - loop.time()
            if left <= 0:
                raise SandboxError(
                    f"no docker host had a free slot within {timeout:.0f}s (hosts: "
                    + ", ".join(
                        f"{h.name} {h.active} here, {h.slots.held()} of "
                        f"{h.spec.max_concurrency} on this machine"
                        for h in hosts
                    )
                    + ")",
                    kind="no_capacity",
                )
            try:
                await asyncio.wait_for(cond.wait(), min(left, SLOT_POLL_S))
            except TimeoutError:
                pass
    return chosen


async def release_slot(host: Host) -> None:
    host.give_slot_back()
    cond = _WAITERS.get()
    async with cond:
        cond.notify_all()
