"""The `ray` backend's evaluation against a real cluster (see `conftest.py`): the issue's
"Done when", end to end through `tbrl eval run` with `RAY_ADDRESS` set.

- an oracle evaluation of 6 bundled tasks at concurrency 6 on 2 x 2 `sandbox` units: 6/6
  solved, spread over both nodes, never more than 4 task containers at once (counted from
  the two engines every 0.2 s), none left; the no-op policy solves none;
- a worker killed mid-evaluation (its whole process group: raylet and host actor): its
  rollouts come back as `node_lost` infra errors, are rerun on the other node, the results
  are complete; once the node is back, its engine's leftovers are reaped: 0 containers on
  either engine. The tasks' reference solutions start with a `sleep` there, so the kill
  lands inside an episode by construction: an oracle episode takes well under a second, and
  a kill that came after the rollout's last call would leave no rollout to see the node go.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cluster.conftest import ROOT, UNITS, run_containers

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
EVAL_S = 600
SLEEP_S = 20  # how long each reference solution waits in the killed-worker test


class Sampler(threading.Thread):
    """Counts the run's running containers on each engine every 0.2 s while an eval runs."""

    def __init__(self, engines: dict, run_id: str) -> None:
        super().__init__(daemon=True)
        self.engines, self.run_id = engines, run_id
        self.peak = 0
        self.seen: dict[str, int] = dict.fromkeys(engines, 0)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            counts = {}
            for name, client in self.engines.items():
                running = [
                    c for c in run_containers(client, self.run_id) if c["State"] == "running"
                ]
                counts[name] = len(running)
                self.seen[name] = max(self.seen[name], len(running))
            self.peak = max(self.peak, sum(counts.values()))
            time.sleep(0.2)


def start_eval(
    cluster, out: Path, policy: str, limit: int, tasks: Path = ROOT / "data" / "tasks"
) -> subprocess.Popen:
    args = [
        sys.executable, "-m", "tbrl_lib.cli", "eval", "run", "--policy", policy,
        "--tasks", str(tasks), "--limit", str(limit),
        "--concurrency", str(limit), "--judge", "none", "--out", str(out),
        "--set", "sandbox.backend=ray",
    ]  # fmt: skip
    log = (out.parent / f"{out.name}.log").open("wb")
    return subprocess.Popen(args, env=cluster.env(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen, out: Path) -> dict:
    try:
        code = process.wait(timeout=EVAL_S)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    log = (out.parent / f"{out.name}.log").read_text()
    assert code == 0, log[-4000:]
    return json.loads((out / "results.json").read_text())


def test_oracle_eval_spreads_over_both_nodes_all_solved_within_capacity(cluster, engines, tmp_path):
    out = tmp_path / "oracle"
    sampler = Sampler(engines, f"eval-{out.name}")
    sampler.start()
    try:
        results = finish(start_eval(cluster, out, "oracle", 6), out)
    finally:
        sampler.stop.set()
        sampler.join()
    trials = results["trials"]
    assert len(trials) == 6 and all(t["resolved"] for t in trials), trials
    assert sampler.peak <= 2 * UNITS, sampler.peak  # the cluster's 4 units, never more
    assert sampler.seen["a"] >= 1 and sampler.seen["b"] >= 1, sampler.seen  # both nodes ran
    assert all(run_containers(c, f"eval-{out.name}") == [] for c in engines.values())

    noop = tmp_path / "noop"
    results = finish(start_eval(cluster, noop, "noop", 4), noop)
    assert len(results["trials"]) == 4 and not any(t["resolved"] for t in results["trials"])


def test_a_worker_killed_mid_eval_leaves_complete_results_and_no_containers(
    cluster, engines, tmp_path
):
    out = tmp_path / "killed"
    run_id = f"eval-{out.name}"
    process = start_eval(cluster, out, "oracle", 6, slow_solutions(tmp_path / "tasks", SLEEP_S))
    deadline = time.monotonic() + EVAL_S
    while not any(c["State"] == "running" for c in run_containers(engines["b"], run_id)):
        assert process.poll() is None and time.monotonic() < deadline, "b never ran a sandbox"
        time.sleep(0.2)
    cluster.workers["b"].kill()  # mid-evaluation: b holds at least one running sandbox
    results = finish(process, out)
    trials = results["trials"]
    assert len(trials) == 6 and all(t["resolved"] for t in trials), trials
    assert any(t["infra_retries"] for t in trials) or any(
        "node_lost" in (t.get("error") or "") for t in trials
    ), "no rollout saw the node go"
    assert run_containers(engines["a"], run_id) == []
    # b's containers outlived its raylet; its node comes back and they are reaped
    assert run_containers(engines["b"], run_id) != []
    cluster.start_worker("b", cluster.workers["b"].docker_host)
    reap = subprocess.run(
        [sys.executable, "-c", REAP], env=cluster.env(), cwd=ROOT, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert reap.returncode == 0, reap.stderr[-3000:]
    assert run_containers(engines["a"], run_id) == [] and run_containers(engines["b"], run_id) == []


def slow_solutions(folder: Path, seconds: int) -> Path:
    """A copy of the bundled tasks whose reference solutions first sleep `seconds` (the images
    are unchanged: a task image's hash covers its environment, not its solution)."""
    shutil.copytree(ROOT / "data" / "tasks", folder)
    for solve in folder.glob("*/solution/solve.sh"):
        shebang, _, rest = solve.read_text().partition("\n")
        solve.write_text(f"{shebang}\nsleep {seconds}\n{rest}")
    return folder


REAP = (
    "from tbrl_lib.sandbox import SandboxConfig, backend_for; "
    "print(backend_for(SandboxConfig(backend='ray')).reap())"
)
