"""`tbrl eval run` and `tbrl tasks check` on task sets written by others, through the real
entry point: the published Terminal-Bench 1 example (a weight written as text, keys without
`test_`) evaluates with `--lenient` and is refused, naming it, without; a folder shaped like
a public Harbor set (Ubuntu base, pinned pip test dependencies) with one genuinely broken
Dockerfile evaluates to a completed run where the broken task is a task error with its
failing command and pip's error line, the others are scored, and nothing is an infra error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "tasks" / "fixtures" / "third_party"
TB1 = FIXTURES / "tb1"
TB2 = FIXTURES / "tb2"
PIP_ERROR = "ERROR: No matching distribution found for iniconfig==9.0.0"


@pytest.mark.docker  # the engine is checked first; nothing runs in it
def test_strict_loading_refuses_the_tb1_example_naming_the_option(tbrl, tmp_path):
    result = tbrl("eval", "run", "--tasks", TB1, "--policy", "noop", "--out", tmp_path / "run")
    line = result.err.split("\r")[-1]  # after the loader's progress bar
    assert result.code == 1 and line.startswith("error: ") and len(line.splitlines()) == 1
    assert "--lenient" in line and "test_weights.json" in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize(("policy", "resolved"), [("oracle", True), ("noop", False)])
def test_eval_run_lenient_on_the_tb1_example(tbrl, tmp_path, base_image, policy, resolved):
    out = tmp_path / policy
    result = tbrl("eval", "run", "--tasks", TB1, "--lenient", "--policy", policy, "--out", out)
    assert result.code == 0, result.err
    assert "changed while reading leniently" in result.out  # each change is reported
    (trial,) = json.loads((out / "results.json").read_text())["trials"]
    assert trial["task_id"] == "hello-world" and trial["resolved"] is resolved, trial
    assert trial["failure_mode"] == ("resolved" if resolved else "no_action")
    assert trial["score"] == (1.0 if resolved else 0.0)


@pytest.mark.docker
@pytest.mark.slow
def test_eval_run_reports_a_broken_dockerfile_as_the_tasks_error(tbrl, tmp_path, base_image):
    out = tmp_path / "run"
    result = tbrl("eval", "run", "--tasks", TB2, "--policy", "oracle", "--out", out)
    assert result.code == 0, result.err  # the run completed
    run = json.loads((out / "results.json").read_text())
    modes = {t["task_id"]: t["failure_mode"] for t in run["trials"]}
    assert modes == {
        "broken-test-deps": "task_error",
        "sales-by-region": "resolved",
        "word-count-py313": "resolved",
    }
    summary = run["summary"]
    assert summary["infra_errors"] == 0 and summary["task_errors"] == 1
    assert summary["n_scored"] == 2 and summary["accuracy"] == 1.0
    reason = summary["task_error_tasks"]["broken-test-deps"]
    assert "`RUN pip3 install --no-cache-dir --break-system-packages pytest==8.4.1 " in reason
    assert PIP_ERROR in reason
    (line,) = [x for x in result.err.splitlines() if x.startswith("task error")]
    assert line.startswith("task error (not scored): broken-test-deps: ") and PIP_ERROR in line
    assert "task errors (not scored)" in result.out and "broken-test-deps" in result.out


@pytest.mark.docker
@pytest.mark.slow
def test_tasks_check_tells_a_task_defect_from_the_rest(tbrl, tmp_path, base_image):
    result = tbrl("tasks", "check", TB2, "--json", tmp_path / "check.json")
    assert result.code == 1, result.out  # something failed: the broken task
    by_id = {r["task_id"]: r for r in json.loads((tmp_path / "check.json").read_text())["results"]}
    broken = by_id.pop("broken-test-deps")
    assert broken["verdict"] == "fail" and PIP_ERROR in broken["reasons"][0]
    assert "Collecting pytest==8.4.1" in broken["build_error"]
    assert all(r["nop_score"] == 0.0 and r["solution_scores"] == [1.0] for r in by_id.values())
    assert "1 do not build (the task's own defect), 0 infra error(s)" in result.out
