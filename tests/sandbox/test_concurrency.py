"""Many rollouts from one event loop: 32 concurrent sandboxes on a 2-core machine all
finish with their own state, idle shells hold no threads, and nothing is left behind."""

from __future__ import annotations

import asyncio
import time

import pytest
from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.sandbox import SandboxConfig, open_sandbox
from tests.sandbox.conftest import make_task, run, tbrl_containers

pytestmark = pytest.mark.docker


@pytest.mark.slow
def test_32_concurrent_rollouts_complete_with_isolated_state(docker_client, base_image):
    config = SandboxConfig(run_id=f"conc-{time.time_ns()}", start_timeout_s=240)
    task = make_task("concurrency", cpus=0.25, memory_mb=256, storage_mb=256)  # 32 caps: 8 GB
    ready = 0

    async def rollout(i: int) -> str:
        nonlocal ready
        async with open_sandbox(task, config) as sb:
            assert sb.shell._t.native  # the exec socket lives on the event loop, no thread
            await sb.run(f"mkdir -p /work && cd /work && export ME={i}")
            ready += 1
            while ready < 32:  # all 32 alive and idle at once
                await asyncio.sleep(0.05)
            await sb.run("echo $ME > mine")
            return (await sb.run("cat mine; pwd")).output

    async def body():
        return await asyncio.gather(*(rollout(i) for i in range(32)))

    outputs = run(body(), timeout=400)
    assert outputs == [f"{i}\n/work\n" for i in range(32)]
    assert tbrl_containers(docker_client, **{"tbrl.run": config.run_id}) == []


def test_reap_command_reports_what_it_did(base_image):
    result = CliRunner().invoke(app, ["docker", "reap"])
    assert result.exit_code == 0, result.output
    assert "removed" in result.output and "kept" in result.output
