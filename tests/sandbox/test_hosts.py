"""The docker backend's one engine (`DOCKER_HOST`, else the local socket): its concurrency
cap, counted across this process's rollouts, and an engine that dies mid-rollout (a second
dockerd on this machine, reached through `DOCKER_HOST`)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tbrl_lib.sandbox import (
    DockerHost,
    SandboxConfig,
    SandboxError,
    SandboxLimitExceeded,
    open_sandbox,
)
from tbrl_lib.sandbox.backends.docker.hosts import acquire_slot, get_host, release_slot
from tests.sandbox.conftest import MINI_IMAGE, make_task, run, stop_second_daemon

# ---------------------------------------------------------------- unit (no Docker)


def test_the_backend_has_one_engine_with_its_cap():
    config = SandboxConfig(docker={"max_concurrency": 3})
    assert config.docker.hosts == (DockerHost(base_url=None, max_concurrency=3),)
    with pytest.raises(ValueError, match="no known scheme"):
        DockerHost(base_url="b:2375")


def test_a_full_engine_makes_rollouts_wait_for_a_slot(tmp_path, monkeypatch):
    monkeypatch.setenv("TBRL_SLOTS_DIR", str(tmp_path))  # not the machine's: others hold those
    (spec,) = SandboxConfig(docker={"max_concurrency": 2}).docker.hosts

    async def body():
        held = [await acquire_slot((spec,), timeout=1) for _ in range(2)]
        with pytest.raises(SandboxError) as info:
            await acquire_slot((spec,), timeout=0.2)
        assert info.value.kind == "no_capacity"
        waiter = asyncio.ensure_future(acquire_slot((spec,), timeout=5))
        await asyncio.sleep(0.1)
        assert not waiter.done()
        await release_slot(held[0])
        await release_slot(await waiter)
        await release_slot(held[1])
        assert get_host(spec).active == 0

    run(body())


# ---------------------------------------------------------------- a second real daemon


@pytest.mark.docker
@pytest.mark.slow
def test_daemon_stopped_mid_rollout_is_an_infra_error(second_daemon, monkeypatch):
    task = make_task("daemon-dies", dockerfile=None, image=MINI_IMAGE)
    config = SandboxConfig(docker={"max_concurrency": 4})
    monkeypatch.setenv("DOCKER_HOST", second_daemon)
    engine = get_host(config.docker.hosts[0])
    engine.close()  # the process's client of the default engine reconnects: to DOCKER_HOST

    async def body():
        async with open_sandbox(task, config) as sb:
            assert (await sb.run("echo up")).output == "up\n"
            running = asyncio.ensure_future(sb.run("sleep 120", timeout=300))
            await asyncio.sleep(0.5)
            t0 = time.monotonic()
            await asyncio.get_running_loop().run_in_executor(None, stop_second_daemon)
            with pytest.raises(SandboxError) as info:
                await running
            assert not isinstance(info.value, SandboxLimitExceeded)
            assert info.value.kind in ("daemon_unreachable", "container_died")
            assert time.monotonic() - t0 < 60
            with pytest.raises(SandboxError):
                await sb.run("echo again")

    try:
        run(body(), timeout=180)
    finally:
        monkeypatch.undo()
        engine.close()  # back to this machine's engine for the tests after this one
