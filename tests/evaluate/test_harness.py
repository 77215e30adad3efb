"""The harness: failure-mode mapping (pure) and real runs on bundled tasks (Docker)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import docker.errors
import pytest

from tbrl_lib.evaluate.harness import failure_mode, run_eval
from tbrl_lib.evaluate.report import compare_runs
from tbrl_lib.evaluate.results import FailureMode, RunConfig, RunResults
from tbrl_lib.sandbox.backends.docker.images import image_tag
from tbrl_lib.tasks import Environment, Limits, Task, load_tasks
from tbrl_lib.tasks import Tests as TaskTests


@pytest.mark.parametrize(
    ("termination", "resolved", "test_timed_out", "expected"),
    [
        # tests passing wins, even after the agent ran out of time (Terminal-Bench scores it)
        ("time_limit", True, False, FailureMode.resolved),
        ("finished", True, False, FailureMode.resolved),
        ("time_limit", False, False, FailureMode.agent_timeout),
        # the harness had to stop an episode that overran its own limit
        ("agent_timeout", False, False, FailureMode.agent_timeout),
        ("token_budget", False, False, FailureMode.context_overflow),
        ("parse_error_streak", False, False, FailureMode.parse_error),
        ("no_action", False, False, FailureMode.no_action),
        ("context_overflow", False, False, FailureMode.context_overflow),
        # the agent stopped normally but the tests ran out of time
        ("finished", False, True, FailureMode.test_timeout),
        # the agent's own reason beats the verifier timeout: it explains more
        ("time_limit", False, True, FailureMode.agent_timeout),
        ("finished", False, False, FailureMode.unresolved),
        ("max_turns", False, False, FailureMode.unresolved),
        (None, False, False, FailureMode.unresolved),
    ],
)
def test_failure_mode(termination, resolved, test_timed_out, expected):
    assert failure_mode(termination, resolved, test_timed_out) == expected


# ---------------------------------------------------------------- real runs (Docker)

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "data" / "tasks"
# Quick bundled tasks (each trial a few seconds), copied so that work in progress elsewhere
# in data/tasks cannot break these tests.
SUBSET = ("word-frequency", "sqlite-top-customers", "find-leaked-secrets")


@pytest.fixture(scope="module")
def subset_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tasks")
    for name in SUBSET:
        assert (BUNDLED / name).is_dir(), f"bundled task {name} is gone; pick another in SUBSET"
        shutil.copytree(BUNDLED / name, root / name)
    return root


@pytest.fixture(scope="module")
def bundled(subset_dir):
    return load_tasks(subset_dir, progress=False).tasks


@pytest.fixture
def tiny_tasks(docker_client, base_image):
    """Tasks made here, their images removed afterwards."""
    made: list[Task] = []

    def make(task_id, solution, test_src, agent_s=60.0, test_s=60.0, dockerfile=None, build_s=600):
        task = Task(
            id=task_id,
            instruction=f"Tiny harness check {task_id}.",
            environment=Environment(dockerfile=dockerfile or f"FROM {base_image}\nWORKDIR /app\n"),
            tests=TaskTests(pytest=test_src),
            solution=solution,
            limits=Limits(
                agent_timeout_sec=agent_s, test_timeout_sec=test_s, build_timeout_sec=build_s
            ),
        )
        made.append(task)
        return task

    yield make
    for task in made:
        with suppress(docker.errors.ImageNotFound):  # the infra case never built one
            docker_client.images.remove(image_tag(task), force=True)


DONE_TEST = "import os\n\ndef test_done():\n    assert os.path.exists('/app/done')\n"


@pytest.mark.docker
@pytest.mark.slow
def test_oracle_resolves_and_noop_does_not(bundled, tmp_path):
    n = len(SUBSET)
    oracle = run_eval(
        bundled, RunConfig(policy="oracle", concurrency=3), tmp_path / "oracle", progress=False
    )
    assert oracle.summary["accuracy"] == 1.0, oracle.summary["failure_modes"]
    assert oracle.summary["failure_modes"]["resolved"] == n
    for trial in oracle.trials:
        assert trial.turns >= 1 and trial.termination == "finished"
        # the training reward, measured the same way: tests 65% + the rule judge 35%
        assert trial.judge_score is not None
        assert trial.reward == pytest.approx(0.65 * trial.score + 0.35 * trial.judge_score)
        assert (tmp_path / "oracle" / trial.trajectory).exists()
    noop = run_eval(
        bundled, RunConfig(policy="noop", concurrency=3), tmp_path / "noop", progress=False
    )
    assert noop.summary["accuracy"] == 0.0
    modes = {m for m, n in noop.summary["failure_modes"].items() if n}
    assert modes <= {"no_action", "unresolved"}, noop.summary["failure_modes"]
    # paired comparison on the same tasks: +100 points, every task won by the oracle
    cmp = compare_runs(tmp_path / "oracle", tmp_path / "noop")
    assert (cmp.difference, cmp.a_better, cmp.n_tasks) == (1.0, n, n)


def test_settings_by_dotted_path_reach_the_rollout_and_bad_ones_are_named():
    import typer

    from tbrl_lib.cli.evaluate import run_config

    config = run_config(
        ["episode.max_turns=3", "episode.tools.bash_default_timeout=5", "reward.weights.judge=0"],
        policy="oracle",
    )
    rollout = config.rollout_config()
    assert rollout.episode.max_turns == 3 and rollout.episode.tools.bash_default_timeout == 5
    assert (
        rollout.reward.weights["judge"] == 0 and rollout.episode.time_limit_s is None
    )  # the task's own timeout
    with pytest.raises(typer.BadParameter, match="max_turnz"):
        run_config(["episode.max_turnz=3"], policy="oracle")


def test_an_engine_that_stays_down_stops_the_run_with_a_way_to_resume(monkeypatch, tmp_path):
    import asyncio

    from tbrl_lib.docker import engine
    from tbrl_lib.evaluate import harness

    pings = []
    monkeypatch.setattr(engine, "ping", lambda *a: pings.append(1))  # never answers
    runner = harness.TrialRunner(
        None, None, RunConfig(policy="noop").rollout_config(), tmp_path, engine_wait_s=0.5
    )
    with pytest.raises(engine.EngineOutage, match="rerun the same command to resume"):
        asyncio.run(runner._wait_for_engine("sandbox: daemon_unreachable: refused"))
    assert len(pings) >= 2  # it kept asking for the whole wait


@pytest.mark.docker
@pytest.mark.slow
def test_task_timeouts_are_honoured_and_scaled(tiny_tasks, tmp_path):
    # the solution needs ~4 s; the task allows the agent 2 s
    slow = tiny_tasks("eval-slow-solution", "sleep 4 && touch /app/done", DONE_TEST, agent_s=2.0)
    run = run_eval([slow], RunConfig(policy="oracle"), tmp_path / "x1", progress=False)
    assert run.trials[0].failure_mode == FailureMode.agent_timeout
    assert run.trials[0].termination == "time_limit"
    assert run.trials[0].agent_seconds < 2.0 + 5.0
    # x6 gives it 12 s: resolved, and the summary says the numbers are not Terminal-Bench's
    run = run_eval(
        [slow], RunConfig(policy="oracle", timeout_scale=6.0), tmp_path / "x6", progress=False
    )
    assert run.trials[0].resolved, run.trials[0]
    assert "NOT comparable" in run.summary["timeouts"]


@pytest.mark.docker
@pytest.mark.slow
def test_verifier_timeout_is_its_own_failure_mode(tiny_tasks, tmp_path):
    hang = "import time\n\ndef test_hangs():\n    time.sleep(60)\n"
    task = tiny_tasks("eval-slow-tests", "touch /app/done", hang, test_s=3.0)
    run = run_eval([task], RunConfig(policy="oracle"), tmp_path, progress=False)
    trial = run.trials[0]
    assert trial.failure_mode == FailureMode.test_timeout and not trial.resolved
    assert trial.test_seconds < 3.0 + 30.0


@pytest.mark.docker
@pytest.mark.slow
def test_infra_errors_are_retried_once_recorded_and_redone_on_resume(
    tiny_tasks, tmp_path, base_image
):
    slow = tiny_tasks(  # a build past its time limit: the machine's, not the task's
        "eval-slow-image",
        "true",
        DONE_TEST,
        dockerfile=f"FROM {base_image}\nRUN sleep 30\n",
        build_s=2,
    )
    run = run_eval([slow], RunConfig(policy="oracle"), tmp_path, progress=False)
    trial = run.trials[0]
    assert trial.failure_mode == FailureMode.infra_error and trial.infra_retries == 1
    assert "build_timeout_sec=2s" in trial.error, trial.error
    assert run.summary["infra_errors"] == 1 and run.summary["task_errors"] == 0
    assert RunResults.open(tmp_path, run.config).done() == {}  # a resume tries it again


@pytest.mark.docker
@pytest.mark.slow
def test_a_dockerfile_that_does_not_build_is_the_tasks_error_asked_once(
    tiny_tasks, tmp_path, base_image
):
    """Not an infra error: not retried, each attempt says why (the failing step and its
    output), counted apart from accuracy, and redone on resume (the task may be fixed)."""
    broken = tiny_tasks(
        "eval-broken-image",
        "true",
        DONE_TEST,
        dockerfile=f"FROM {base_image}\nRUN echo broken on purpose && exit 3\n",
    )
    good = tiny_tasks("eval-good-image", "touch /app/done", DONE_TEST)
    config = RunConfig(policy="oracle", attempts=2, concurrency=2)
    run = run_eval([broken, good], config, tmp_path, progress=False)
    bad = [t for t in run.trials if t.task_id == broken.id]
    assert [t.failure_mode for t in bad] == [FailureMode.task_error] * 2
    assert all(t.infra_retries == 0 for t in bad) and bad[0].error == bad[1].error
    assert "`RUN echo broken on purpose && exit 3` exited 3: broken on purpose" in bad[0].error
    s = run.summary
    assert s["task_errors"] == 2 and s["infra_errors"] == 0 and s["n_scored"] == 2
    assert s["accuracy"] == 1.0 and list(s["task_error_tasks"]) == [broken.id]
    assert set(RunResults.open(tmp_path, run.config).done()) == {(good.id, 0), (good.id, 1)}


@pytest.mark.docker
@pytest.mark.slow
def test_killed_run_resumes_to_the_same_summary(subset_dir, tmp_path):
    """SIGKILL a real `tbrl eval run` mid-run, rerun it, compare with an uninterrupted run."""
    tbrl = str(Path(sys.executable).parent / "tbrl")
    out = tmp_path / "killed"
    cmd = [
        tbrl,
        "eval",
        "run",
        "--tasks",
        str(subset_dir),
        "--policy",
        "oracle",
        "--attempts",
        "2",
        "--limit",
        "2",
        "--concurrency",
        "2",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    results = out / "results.json"
    deadline = time.monotonic() + 240
    before: dict = {}
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists():
                before = {
                    (t["task_id"], t["attempt"]): t["finished_at"]
                    for t in json.loads(results.read_text())["trials"]
                }
                if before:
                    break
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the tbrl process itself, as a crash would
        proc.wait(timeout=30)
    assert before, f"no trial finished before the deadline: {proc.stderr.read().decode()[-2000:]}"
    partial = RunResults.load(out)
    assert 1 <= len(partial.trials) < 4, "the run was not killed halfway"

    resumed = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    final = RunResults.load(out)
    assert len(final.trials) == 4
    kept = {t.key: t.finished_at for t in final.trials if t.key in before}
    assert kept == before, "finished trials were redone"

    straight = run_eval(
        load_tasks(subset_dir, progress=False).tasks,
        RunConfig(
            policy="oracle", attempts=2, concurrency=2, tasks_source=str(subset_dir), limit=2
        ),
        tmp_path / "straight",
        progress=False,
    )
    assert final.summary == straight.summary


@pytest.mark.docker
@pytest.mark.slow
def test_tiny_checkpoint_runs_through_the_harness(bundled, tmp_path):
    """`hf:PATH` through the same harness, timeouts shrunk (x0.03: 18 s for the agent) and
    flagged. On a busy CPU the tiny model may not finish one reply in time, so the outcome
    is any agent failure mode, never an infra error; token counts are checked when a turn ended."""
    from tbrl_lib.models.tiny_corpus import build_tiny_model

    model = build_tiny_model(tmp_path / "models")
    run = run_eval(
        bundled,
        RunConfig(policy=f"hf:{model}", timeout_scale=0.03, limit=1),
        tmp_path / "run",
        progress=False,
    )
    trial = run.trials[0]
    assert trial.failure_mode not in (FailureMode.infra_error, FailureMode.resolved), trial
    assert (tmp_path / "run" / trial.trajectory).exists()
    if trial.turns:
        assert trial.tokens_in > 0 and trial.tokens_out > 0
    assert "NOT comparable" in run.summary["timeouts"]
