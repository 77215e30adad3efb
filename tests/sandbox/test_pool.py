"""Warm pool: acquire is a hand-off of a ready container, the pool refills, and closing
it removes every container it still holds; `open_sandbox` uses a shared pool on request."""

from __future__ import annotations

import asyncio
import time

import pytest

from tbrl_lib.sandbox import SandboxConfig
from tbrl_lib.sandbox.backends.docker.pool import SandboxPool, close_pools, open_sandbox, prewarm
from tests.sandbox.conftest import make_task, run, tbrl_containers

pytestmark = pytest.mark.docker


def test_pool_hands_out_ready_sandboxes_refills_and_drains(docker_client, base_image):
    config = SandboxConfig(run_id=f"pool-{time.time_ns()}")
    task = make_task("pool-test")

    async def body():
        async with SandboxPool(task, 2, config) as pool:
            await pool.wait_ready(60)
            assert pool.ready == 2
            warm = {c["Id"] for c in tbrl_containers(docker_client, **{"tbrl.run": config.run_id})}
            t0 = time.monotonic()
            async with open_sandbox(task, config, pool=pool) as sb:
                handoff = time.monotonic() - t0
                assert sb.container_id in warm  # a pre-started container, not a new one
                assert (await sb.run("echo $((6*7)); pwd")).output == "42\n/app\n"
                used = sb.container_id
            assert handoff < 1.0
            await pool.wait_ready(60)  # refilled behind the hand-off
            assert pool.ready == 2
            assert used not in {
                c["Id"] for c in tbrl_containers(docker_client, **{"tbrl.run": config.run_id})
            }
        return tbrl_containers(docker_client, **{"tbrl.run": config.run_id})

    assert run(body()) == []  # drained on close


def test_pooled_wall_clock_starts_at_hand_off(base_image):
    config = SandboxConfig(wall_clock_s=3)

    async def body():
        async with SandboxPool(make_task("pool-clock"), 1, config) as pool:
            await pool.wait_ready(60)
            await asyncio.sleep(3.5)  # longer than the wall clock, while waiting in the pool
            async with open_sandbox(pool.task, config, pool=pool) as sb:
                assert (await sb.run("echo fresh")).output == "fresh\n"

    run(body())


def test_shared_pool_via_config_and_prewarm(docker_client, base_image):
    config = SandboxConfig(pool_size=2, run_id=f"shared-{time.time_ns()}")
    task = make_task("pool-shared")

    async def body():
        await prewarm(task, config)
        assert len(tbrl_containers(docker_client, **{"tbrl.run": config.run_id})) == 2

        async def rollout(i):
            async with open_sandbox(task, config) as sb:
                return (await sb.run(f"echo {i}")).output

        outs = await asyncio.gather(*(rollout(i) for i in range(4)))  # 2 warm + 2 cold
        assert outs == [f"{i}\n" for i in range(4)]
        await close_pools()
        return tbrl_containers(docker_client, **{"tbrl.run": config.run_id})

    assert run(body()) == []


def test_pool_size_must_be_positive(base_image):
    async def body():
        with pytest.raises(ValueError, match="pool size"):
            SandboxPool(make_task(), 0)

    run(body())
