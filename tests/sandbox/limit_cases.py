"""The limits table's cases (docs/sandbox.md#limits-held), shared by the docker backend's test
(`test_limits.py`, in this process) and the ray backend's (`tests/cluster/test_ray_limits.py`,
through a driver process of the test cluster: `python -m tests.sandbox.limit_cases`).

Each case pushes past one limit inside a real sandbox, through `run_rollout`, with a scripted
agent: the push, then the task's answer and `<finish>` (a limit that ends the rollout leaves
that turn unrun). `observe` records what matters as plain data, `check` holds it to the case:
the rollout's termination and failure mode (never an infra error), what the push saw, and
that the host is unharmed - a neighbour sandbox opened before still answers with its state,
no container of the case is left on any engine, the engine's disk is back where it was.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import docker
from docker.errors import ContainerError

from tbrl_lib.agent.actions import render_action
from tbrl_lib.agent.scripted import ScriptedPolicy
from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.evaluate.harness import failure_mode
from tbrl_lib.evaluate.results import FailureMode
from tbrl_lib.rollout import RolloutConfig, run_rollout
from tbrl_lib.sandbox import SandboxConfig, open_sandbox
from tbrl_lib.tasks.model import Environment, Limits, Task, Tests

GIB = 1 << 30
DISK_SLACK = 2 * GIB
"""How far below its level before the case the engine's disk may be afterwards (other
people's builds move it too; a storage case's 4-20 GB left behind would not pass)."""
CPU_LOOPS_S = 3
CPU_READ = (
    "u() { cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null || "
    "cat /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage 2>/dev/null || "
    "echo $(( $(awk '/^usage_usec/{print $2}' /sys/fs/cgroup/cpu.stat) * 1000 )); }; "
)
BUSY = (
    CPU_READ + f"a=$(u); for i in 1 2; do timeout {CPU_LOOPS_S} sh -c 'while :; do :; done' & "
    "done; wait; b=$(u); echo cpu_ms=$(( (b - a) / 1000000 ))"
)
"""Two busy loops for CPU_LOOPS_S, then the CPU time the container's cgroup was given."""
CONNECT = (
    "python3 -c \"import socket; socket.create_connection(('{ip}', {port}), 3); print('reached')\""
)


@dataclass(frozen=True)
class LimitCase:
    """One row of the limits table: the limit, the agent's push past it, what must follow."""

    name: str
    push: str
    termination: str
    failure: FailureMode
    shows: str
    """Text the push's observation (or, for a limit that ends the rollout, the trajectory's
    termination message) must hold."""
    limits: dict = field(default_factory=dict)
    timeout_s: float = 30
    """The push's `timeout_secs`."""
    kind: str | None = None
    """The `SandboxLimitExceeded` kind the trajectory records, for a limit that ends it."""


CASES = [
    LimitCase(
        "command wall clock", "sleep 100", "finished", FailureMode.resolved,
        "timed out after 2s", timeout_s=2,
    ),
    LimitCase(
        "episode wall clock", "sleep 100", "time_limit", FailureMode.agent_timeout,
        "time limit", limits={"agent_timeout_sec": 4},
    ),
    LimitCase(
        "output size", "yes tbrl-flood | head -c 30000000", "finished", FailureMode.resolved,
        "characters omitted",
    ),
    LimitCase(
        "memory", "python3 -c \"x = b'a' * (1024 ** 3)\"", "finished", FailureMode.resolved,
        "out-of-memory killer", limits={"memory_mb": 128},
    ),
    LimitCase("cpu", BUSY, "finished", FailureMode.resolved, "cpu_ms=", limits={"cpus": 0.5}),
    LimitCase(
        "processes", "bomb() { bomb | bomb & bomb; }; bomb", "resource_limit",
        FailureMode.unresolved, "process limit", limits={"pids": 64}, timeout_s=8, kind="pids",
    ),
    LimitCase(
        "storage, 20 GB at once", "fallocate -l 20G /app/big; sleep 30", "storage_limit",
        FailureMode.storage_limit, "past its storage limit of 4096 MB",
        limits={"storage_mb": 4096}, timeout_s=60, kind="storage",
    ),
    LimitCase(
        "storage, 8 GB with dd", "dd if=/dev/zero of=/app/big bs=1M count=8192",
        "storage_limit", FailureMode.storage_limit, "past its storage limit of 4096 MB",
        limits={"storage_mb": 4096}, timeout_s=120, kind="storage",
    ),
    LimitCase(
        "network off", CONNECT, "finished", FailureMode.resolved, "Network is unreachable"
    ),
]  # fmt: skip


def task_of(case: LimitCase) -> Task:
    """A task whose test checks /app/answer.txt says 42, with the case's limits."""
    return Task(
        id="limits-" + re.sub(r"[^a-z0-9]+", "-", case.name).strip("-"),
        instruction="Write the number 42 to /app/answer.txt.",
        environment=Environment(dockerfile=f"FROM {BASE_IMAGE}\n"),
        tests=Tests(
            pytest="from pathlib import Path\n\n\ndef test_answer():\n"
            "    assert Path('/app/answer.txt').read_text().strip() == '42'\n"
        ),
        limits=Limits(**{"agent_timeout_sec": 120, **case.limits}),
    )


def policy_of(case: LimitCase, target: tuple[str, int]) -> ScriptedPolicy:
    push = case.push.replace("{ip}", target[0]).replace("{port}", str(target[1]))
    answer = render_action("bash", {"cmd": "echo 42 > /app/answer.txt"})
    return ScriptedPolicy(
        [
            render_action("bash", {"cmd": push, "timeout_secs": case.timeout_s}),
            answer + "\n" + render_action("finish", {"message": "done"}),
        ]
    )


async def observe(
    case: LimitCase,
    sandbox: SandboxConfig,
    target: tuple[str, int],
    engines: list[str | None],
    disk_root: str,
) -> dict:
    """Run the case and record its outcome and the host's state, as JSON-ready data."""
    run_id = f"{sandbox.run_id}-{len(case.name)}-{time.time_ns()}"
    config = RolloutConfig(
        sandbox=sandbox.model_copy(update={"run_id": run_id}), reward={"judge": "none"}
    )
    neighbour = task_of(LimitCase("neighbour", "", "", FailureMode.resolved, ""))
    async with open_sandbox(neighbour, config.sandbox) as near:
        await near.run("echo kept > /app/mark")
        free_before = shutil.disk_usage(disk_root).free
        started = time.monotonic()
        result = await run_rollout(task_of(case), policy_of(case, target), config)
        seconds = time.monotonic() - started
        near_after = (await near.run("cat /app/mark", timeout=30)).output.strip()
    traj = result.trajectory
    first = traj.turns[0] if traj and traj.turns else None
    return {
        "name": case.name,
        "termination": result.termination,
        "failure_mode": failure_mode(
            result.termination, result.resolved, bool(result.tests and result.tests.timed_out)
        ).value,
        "infra_error": result.infra_error,
        "reward": result.total,
        "resolved": result.resolved,
        "limit_exceeded": traj.limit_exceeded if traj else None,
        "message": traj.termination_message if traj else "",
        "output": first.observation if first and first.observation else "",
        "push_s": first.tools_seconds if first else None,
        "push_cut_chars": first.calls[0].truncated_chars if first and first.calls else 0,
        "seconds": seconds,
        "neighbour": near_after,
        "left": _left(engines, run_id),
        "free_before": free_before,
        "free_after": shutil.disk_usage(disk_root).free,
    }


@contextlib.contextmanager
def outside_target(client: docker.DockerClient) -> Iterator[tuple[str, int]]:
    """The network case's "outside" address, on this machine only: a listener container of
    the test's own on an internal Docker network it creates (no route off the machine),
    checked reachable from a control container on that network; removed at the end."""
    name = f"tbrl-limits-{os.getpid()}"
    network = client.networks.create(name, internal=True, labels={"tbrl.test": name})
    port = 8765
    listener = None
    try:
        listener = client.containers.run(
            BASE_IMAGE,
            ["python3", "-m", "http.server", str(port)],
            detach=True,
            network=name,
            labels={"tbrl.test": name},
        )
        listener.reload()
        ip = listener.attrs["NetworkSettings"]["Networks"][name]["IPAddress"]
        reached = b""
        for _ in range(30):  # the server binds within a second or two
            with contextlib.suppress(ContainerError):
                reached = client.containers.run(
                    BASE_IMAGE, ["sh", "-c", CONNECT.replace("{ip}", ip).replace("{port}", str(port))], network=name,
                    remove=True,
                )  # fmt: skip
            if b"reached" in reached:
                break
            time.sleep(0.3)
        assert b"reached" in reached, "a control container on the test's network cannot reach it"
        yield ip, port
    finally:
        if listener is not None:
            listener.remove(force=True)
        network.remove()


def _left(engines: list[str | None], run_id: str) -> list[str]:
    """Containers of the case's run on any engine (none may be left)."""
    found = []
    for url in engines:
        client = docker.DockerClient(base_url=url) if url else docker.from_env()
        try:
            listed = client.api.containers(all=True, filters={"label": f"tbrl.run={run_id}"})
            found += [c["Id"][:12] for c in listed]
        finally:
            client.close()
    return found


def check(case: LimitCase, seen: dict) -> None:
    """The case's outcome as the table states it, and the host unharmed."""
    where = f"{case.name}: " + str({k: str(v)[:300] for k, v in seen.items()})
    assert seen["infra_error"] is None, where
    assert (seen["termination"], seen["failure_mode"]) == (case.termination, case.failure), where
    text = seen["output"] if case.termination == "finished" else seen["message"]
    assert case.shows in text, where
    assert seen["neighbour"] == "kept" and seen["left"] == [], where
    assert seen["free_after"] > seen["free_before"] - DISK_SLACK, where
    assert (seen["limit_exceeded"] or {}).get("kind") == case.kind, where
    if case.name == "output size":  # 30 MB printed; the driver kept 64 KiB, the model sees 10k
        assert 0 < seen["push_cut_chars"] < 100_000, where
    if case.name == "command wall clock":
        assert seen["push_s"] < case.timeout_s + 10, where
    if case.name == "cpu":
        cpu_ms = int(re.search(r"cpu_ms=(\d+)", seen["output"]).group(1))
        assert cpu_ms <= 1.25 * case.limits["cpus"] * CPU_LOOPS_S * 1000, where
    if case.failure == FailureMode.storage_limit:
        assert seen["reward"] == 0.0 and not seen["resolved"], where
        assert seen["limit_exceeded"] == {
            "kind": "storage",
            "limit": 4096,
            "used": seen["limit_exceeded"]["used"],
            "unit": "MB",
        }, where
        assert 4096 < seen["limit_exceeded"]["used"], where
        assert seen["seconds"] < 30, where  # stopped, not run to the end of the push
        if "dd" in case.name:  # stopped on its way: 0.3-2.4 GB/s here, measured every 0.5 s
            assert seen["limit_exceeded"]["used"] < 8192, where


def main() -> None:
    """The ray test's driver: every case through `sandbox.backend=ray`, observations as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--target", required=True, help="IP:PORT of the network case's listener")
    parser.add_argument("--engines", required=True, help="comma-separated engine URLs")
    parser.add_argument("--disk-root", required=True)
    args = parser.parse_args()
    ip, port = args.target.rsplit(":", 1)
    engines = [url or None for url in args.engines.split(",")]
    sandbox = SandboxConfig(backend="ray", run_id="ray-limits", start_timeout_s=300)

    async def every_case() -> list[dict]:
        return [
            await observe(case, sandbox, (ip, int(port)), engines, args.disk_root) for case in CASES
        ]

    with open(args.out, "w") as out:
        json.dump(asyncio.run(every_case()), out, indent=1)


if __name__ == "__main__":
    main()
