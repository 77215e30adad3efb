"""Several Docker hosts, tested with a second dockerd on this machine: least-loaded
placement, per-host concurrency limits, and a daemon that dies mid-rollout."""

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
from tests.sandbox.conftest import D2_URL, MINI_IMAGE, make_task, run, stop_second_daemon

# ---------------------------------------------------------------- unit (no Docker)


def test_config_accepts_tuples_and_rejects_unknown_schemes():
    config = SandboxConfig(docker={"hosts": [("unix:///a.sock", 3), "tcp://b:2375"]})
    assert config.docker.hosts == (
        DockerHost(base_url="unix:///a.sock", max_concurrency=3),
        DockerHost(base_url="tcp://b:2375"),
    )
    with pytest.raises(ValueError, match="no known scheme"):
        SandboxConfig(docker={"hosts": ["b:2375"]})
    with pytest.raises(ValueError, match="max_concurrency"):
        SandboxConfig(docker={"hosts": [("unix:///a.sock", 1, 2)]})
    with pytest.raises(ValueError, match="at least one"):
        SandboxConfig(docker={"hosts": []})


def test_slots_go_to_the_least_loaded_host_and_wait_when_full():
    specs = (
        DockerHost(base_url="unix:///slot-a", max_concurrency=2),
        DockerHost(base_url="unix:///slot-b", max_concurrency=1),
    )

    async def body():
        picks = [await acquire_slot(specs, timeout=1) for _ in range(3)]
        assert [h.base_url for h in picks] == ["unix:///slot-a", "unix:///slot-b", "unix:///slot-a"]
        with pytest.raises(SandboxError) as info:
            await acquire_slot(specs, timeout=0.2)
        assert info.value.kind == "no_capacity"
        waiter = asyncio.ensure_future(acquire_slot(specs, timeout=5))
        await asyncio.sleep(0.1)
        assert not waiter.done()
        await release_slot(picks[1])
        assert (await waiter).base_url == "unix:///slot-b"
        for h in (picks[0], picks[2], await waiter):
            await release_slot(h)
        assert get_host(specs[0]).active == 0 and get_host(specs[1]).active == 0

    run(body())


# ---------------------------------------------------------------- two real daemons


@pytest.mark.docker
@pytest.mark.slow
def test_rollouts_spread_over_two_daemons(second_daemon):
    task = make_task("two-hosts", dockerfile=None, image=MINI_IMAGE)
    config = SandboxConfig(docker={"hosts": [(None, 2), (second_daemon, 1)]})

    async def body():
        placed: list[str] = []
        gate = asyncio.Event()

        async def rollout(i):
            async with open_sandbox(task, config) as sb:
                placed.append(sb.host.name)
                assert (await sb.run(f"echo {i}; cd /tmp; pwd")).output == f"{i}\n/tmp\n"
                await gate.wait()

        jobs = [asyncio.ensure_future(rollout(i)) for i in range(4)]
        deadline = time.monotonic() + 60
        while len(placed) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert sorted(placed) == sorted(["default", "default", D2_URL])  # 2 + 1 slots
        await asyncio.sleep(0.3)
        assert len(placed) == 3  # the fourth waits for a free slot
        gate.set()
        await asyncio.gather(*jobs)
        assert len(placed) == 4

    run(body())


@pytest.mark.docker
@pytest.mark.slow
def test_daemon_stopped_mid_rollout_is_an_infra_error(second_daemon):
    task = make_task("daemon-dies", dockerfile=None, image=MINI_IMAGE)
    config = SandboxConfig(docker={"hosts": [(second_daemon, 4)]})

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

    run(body(), timeout=180)
