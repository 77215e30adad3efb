"""A host's declared capacity holds across the processes of a machine: real OS processes
contend for the slot files (`sandbox.slots`), never more than the capacity hold one at once,
and a process killed with SIGKILL gives its slot back. No Docker: slots are taken before
any container exists."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import time

import pytest

from tbrl_lib.sandbox import DockerHost, SandboxError
from tbrl_lib.sandbox.backends.docker.hosts import acquire_slot, release_slot
from tbrl_lib.sandbox.backends.docker.slots import ENV_VAR, SlotFiles

URL = "tcp://slots-test:2375"
CTX = multiprocessing.get_context("fork")


@pytest.fixture(autouse=True)
def slots_dir(tmp_path, monkeypatch):
    """A private slot directory (children inherit the environment)."""
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "slots"))


def _contend(capacity: int, rounds: int, live, peak, lock) -> None:
    """Take a slot `rounds` times, counting how many processes hold one at once."""

    async def body() -> None:
        specs = (DockerHost(base_url=URL, max_concurrency=capacity),)
        for _ in range(rounds):
            host = await acquire_slot(specs, timeout=60)
            with lock:
                live.value += 1
                peak.value = max(peak.value, live.value)
            time.sleep(random.uniform(0.005, 0.03))  # holds it (blocking, like a busy process)
            with lock:
                live.value -= 1
            await release_slot(host)

    asyncio.run(body())


def test_processes_never_hold_more_slots_than_the_capacity():
    capacity, workers, rounds = 3, 6, 15
    live, peak, lock = CTX.Value("i", 0), CTX.Value("i", 0), CTX.Lock()
    procs = [
        CTX.Process(target=_contend, args=(capacity, rounds, live, peak, lock))
        for _ in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    assert peak.value == capacity  # contended up to the capacity, never beyond
    assert SlotFiles(URL, capacity).held() == 0  # every slot given back


def _hold(capacity: int, ready) -> None:
    async def body() -> None:
        await acquire_slot((DockerHost(base_url=URL, max_concurrency=capacity),), timeout=30)
        ready.set()
        await asyncio.sleep(3600)

    asyncio.run(body())


def test_a_killed_holder_gives_its_slot_back():
    capacity = 2
    readies = [CTX.Event() for _ in range(capacity)]
    holders = [CTX.Process(target=_hold, args=(capacity, r)) for r in readies]
    for p in holders:
        p.start()
    try:
        assert all(r.wait(30) for r in readies)
        assert SlotFiles(URL, capacity).held() == capacity
        specs = (DockerHost(base_url=URL, max_concurrency=capacity),)

        async def body() -> float:
            with pytest.raises(SandboxError) as info:
                await acquire_slot(specs, timeout=0.5)  # full: both held by other processes
            assert info.value.kind == "no_capacity"
            assert "0 here, 2 of 2 on this machine" in str(info.value)
            os.kill(holders[0].pid, signal.SIGKILL)
            t0 = time.monotonic()
            host = await acquire_slot(specs, timeout=10)  # the dead holder's slot
            waited = time.monotonic() - t0
            assert SlotFiles(URL, capacity).held() == capacity
            await release_slot(host)
            return waited

        assert asyncio.run(body()) < 2.0
        holders[0].join(10)
        assert holders[0].exitcode == -signal.SIGKILL
    finally:
        for p in holders:
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
            p.join(10)
    assert SlotFiles(URL, capacity).held() == 0


def _sleep(started, seconds: float) -> None:
    started.set()  # past the fork handlers
    time.sleep(seconds)


def test_a_forked_child_does_not_keep_its_parents_slot():
    specs = (DockerHost(base_url=URL, max_concurrency=1),)

    async def body() -> None:
        host = await acquire_slot(specs, timeout=5)
        started = CTX.Event()
        child = CTX.Process(target=_sleep, args=(started, 30))
        child.start()  # forked while the slot is held
        try:
            assert started.wait(30)
            await release_slot(host)
            assert SlotFiles(URL, 1).held() == 0
            await release_slot(await acquire_slot(specs, timeout=1))
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.join(10)

    asyncio.run(body())
