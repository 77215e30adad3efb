"""Leak-proof cleanup: SIGKILLed drivers' containers are reaped (and only those),
SIGTERM cleans up on the way out, owners are identified by pid *and* start time."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import docker
import pytest

from tbrl_lib.docker import reaper
from tests.sandbox.conftest import tbrl_containers

DRIVER = """
import asyncio, sys
from tbrl_lib.sandbox import open_sandbox, SandboxConfig
from tests.sandbox.conftest import make_task

async def main():
    async with open_sandbox(make_task("reap-test"), SandboxConfig(run_id=sys.argv[1])) as sb:
        await sb.run("sleep 600 &")
        print(sb.container_id, flush=True)
        await sb.run("sleep 600", timeout=900)

asyncio.run(main())
"""


def _start_driver(run_id: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, run_id],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    line = proc.stdout.readline().strip()
    assert line, "driver did not start a sandbox"
    return proc, line


def test_owner_identity_uses_pid_and_start_time():
    me = reaper.owner_label()
    assert reaper.owner_alive(me) is True
    host, pid, ticks = me.rsplit(":", 2)
    assert reaper.owner_alive(f"{host}:{pid}:{int(ticks) + 1}") is False  # pid reused
    assert reaper.owner_alive(f"{host}:999999999:1") is False
    assert reaper.owner_alive("another-machine:1:1") is None
    assert reaper.owner_alive("garbage") is False


@pytest.mark.docker
def test_sigkilled_driver_leaves_nothing_after_reap(docker_client, base_image):
    run_id = f"reap-{os.getpid()}-{time.time_ns()}"
    proc, cid = _start_driver(run_id)
    assert len(tbrl_containers(docker_client, **{"tbrl.run": run_id})) == 1
    proc.kill()  # SIGKILL: no atexit, no handler
    proc.wait(10)
    assert len(tbrl_containers(docker_client, **{"tbrl.run": run_id})) == 1  # leaked for now
    report = reaper.reap(docker_client)
    assert cid[:12] in report.containers
    assert tbrl_containers(docker_client, **{"tbrl.run": run_id}) == []


@pytest.mark.docker
def test_sigterm_cleans_up_on_the_way_out(docker_client, base_image):
    run_id = f"term-{os.getpid()}-{time.time_ns()}"
    proc, _ = _start_driver(run_id)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) != 0
    assert tbrl_containers(docker_client, **{"tbrl.run": run_id}) == []


@pytest.mark.docker
def test_reap_keeps_live_owners_and_other_machines(docker_client, base_image):
    labels_live = {reaper.LABEL_OWNER: reaper.owner_label(), reaper.LABEL_RUN: "reap-keep"}
    labels_foreign = {reaper.LABEL_OWNER: "some-other-host:1:1", reaper.LABEL_RUN: "reap-keep"}
    made = [
        docker_client.api.create_container(base_image, "true", labels=lab)["Id"]
        for lab in (labels_live, labels_foreign)
    ]
    net = docker_client.api.create_network(
        f"tbrl-reap-{os.getpid()}", labels={reaper.LABEL_OWNER: f"{reaper.HOSTNAME}:999999999:1"}
    )["Id"]
    try:
        report = reaper.reap(docker_client)
        ids = {c["Id"] for c in tbrl_containers(docker_client, **{"tbrl.run": "reap-keep"})}
        assert set(made) <= ids
        assert report.kept_alive_owner >= 1 and report.kept_foreign >= 1
        assert f"tbrl-reap-{os.getpid()}" in report.networks
    finally:
        for cid in made:
            docker_client.api.remove_container(cid, force=True)
        with contextlib.suppress(docker.errors.NotFound):
            docker_client.api.remove_network(net)


@pytest.mark.docker
def test_reap_of_one_run_removes_that_runs_dead_containers_only(docker_client, base_image, tbrl):
    """A run that ends reaps with its id (`SandboxBackend.reap(run_id)`, `tbrl docker reap
    --run-id`): another run's leftovers, dead owner or not, are left to their own reap."""
    dead = f"{reaper.HOSTNAME}:999999999:1"
    runs = {name: f"{name}-{os.getpid()}-{time.time_ns()}" for name in ("ended", "other")}
    made = {
        name: docker_client.api.create_container(
            base_image, "true", labels={reaper.LABEL_OWNER: dead, reaper.LABEL_RUN: run}
        )["Id"]
        for name, run in runs.items()
    }
    try:
        done = tbrl("docker", "reap", "--run-id", runs["ended"])
        assert done.code == 0 and "removed 1 containers, 0 networks, 0 volumes" in done.out
        assert tbrl_containers(docker_client, **{"tbrl.run": runs["ended"]}) == []
        assert len(tbrl_containers(docker_client, **{"tbrl.run": runs["other"]})) == 1
    finally:
        for cid in made.values():
            with contextlib.suppress(docker.errors.NotFound):
                docker_client.api.remove_container(cid, force=True)
