"""The ray backend's sandbox actors on a Ray instance of this process's (8 `sandbox` units):
each sandbox's actor holds its unit while it runs; a closed one waits idle for the next
rollout of this process (`sandbox.ray.keep_idle_s`) and serves it on the same node without a
new process, then ends, and Ray frees the unit."""

from __future__ import annotations

import time

import pytest

from tbrl_lib.sandbox import SandboxConfig, backend_for
from tests.sandbox.conftest import make_task, run

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]


def test_a_closed_sandboxs_actor_serves_the_next_rollout_then_frees_its_unit(
    base_image, monkeypatch
):
    ray = pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    config = SandboxConfig(
        backend="ray", run_id=f"ray-idle-{time.time_ns()}", ray={"keep_idle_s": 3}
    )
    backend = backend_for(config)
    task = make_task("ray-idle")

    def free_becomes(units: int, within: float) -> None:
        """Ray's view of the free units reaches `units` (it is updated every few 100 ms)."""
        deadline = time.monotonic() + within
        while ray.available_resources().get("sandbox", 0) != units:
            assert time.monotonic() < deadline, ray.available_resources()
            time.sleep(0.2)

    async def body() -> None:
        async with backend.open(task, config) as first:
            actor = first.actor._actor_id
            assert (await first.run("echo one")).output == "one\n"
            free_becomes(7, within=10)
        free_becomes(7, within=1)  # closed: its actor waits idle, the unit still held
        began = time.monotonic()
        async with backend.open(task, config) as second:
            assert second.actor._actor_id == actor and second.stats.place == first.stats.place
            assert time.monotonic() - began < 60
            assert (await second.run("echo two")).output == "two\n"

    try:
        run(body(), timeout=300)
        free_becomes(8, within=30)  # ended after keep_idle_s: the unit is the cluster's again
    finally:
        ray.shutdown()
