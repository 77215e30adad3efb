"""Harbor trial results read into tbrl's `TrialResult`: the score, the failure mode (tbrl's
termination rule, Harbor's timeouts, anything else an infra error, out of the denominators),
timings per phase, attempts in start order. The dicts are in the shape of Harbor 0.25.0's
`result.json` (the fields tbrl reads; a real one is read in test_harbor_run.py)."""

from __future__ import annotations

import json

import pytest

from tbrl_lib.evaluate.results import RunConfig
from tbrl_lib.harbor.job import phase_seconds, read_job, to_trial


def harbor_result(
    task="t1", reward=1.0, termination="finished", exception=None, started="2026-12-06T05:00:00"
):
    return {
        "task_name": task,
        "trial_name": f"{task}__{started[-2:]}",
        "started_at": started,
        "finished_at": "2026-12-06T05:00:30",
        "environment_setup": {
            "started_at": "2026-12-06T05:00:00",
            "finished_at": "2026-12-06T05:00:05",
        },
        "agent_execution": {
            "started_at": "2026-12-06T05:00:05",
            "finished_at": "2026-12-06T05:00:15",
        },
        "verifier": {"started_at": "2026-12-06T05:00:16", "finished_at": "2026-12-06T05:00:20"},
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "agent_result": {
            "n_input_tokens": 100,
            "n_output_tokens": 20,
            "metadata": {"termination": termination, "turns": 3},
        },
        "exception_info": exception
        and {"exception_type": exception, "exception_message": "it failed"},
    }


@pytest.mark.parametrize(
    ("result", "resolved", "mode", "score"),
    [
        (harbor_result(), True, "resolved", 1.0),
        (harbor_result(reward=0.4), False, "unresolved", 0.4),
        (harbor_result(reward=0.0, termination="no_action"), False, "no_action", 0.0),
        (harbor_result(reward=0.0, termination="max_turns"), False, "unresolved", 0.0),
        (harbor_result(reward=0.0, exception="AgentTimeoutError"), False, "agent_timeout", 0.0),
        (harbor_result(reward=None, exception="VerifierTimeoutError"), False, "test_timeout", 0.0),
        (harbor_result(reward=None, exception="DockerError"), False, "infra_error", 0.0),
        (harbor_result(reward=1.0, exception="RuntimeError"), False, "infra_error", 0.0),
        # the tests passed although the agent ran out of time: resolved, as tbrl counts it
        (harbor_result(reward=1.0, exception="AgentTimeoutError"), True, "resolved", 1.0),
    ],
)
def test_outcome(result, resolved, mode, score, tmp_path):
    trial = to_trial(result, 0, None, tmp_path, tmp_path)
    assert (trial.resolved, trial.failure_mode.value, trial.score) == (resolved, mode, score)
    if result["exception_info"]:
        assert trial.error == f"{result['exception_info']['exception_type']}: it failed"


BUILD_FAILURE = (
    "Docker compose command failed for environment broken. Command: docker compose ... build. "
    "Return code: 17. Stdout: #7 [main 3/5] RUN pip3 install pytest==8.4.1 iniconfig==9.0.0\n"
    "#7 4.500 ERROR: No matching distribution found for iniconfig==9.0.0\n------\n"
    " > [main 3/5] RUN pip3 install pytest==8.4.1 iniconfig==9.0.0:\n"
    "4.500 ERROR: No matching distribution found for iniconfig==9.0.0\n------\n"
    "failed to solve: executor failed running [/bin/sh -c pip3 install]: exit code: 1\n"
)
"""The shape of Harbor 0.25.0's RuntimeError for a failing Dockerfile step (BuildKit's
output, abridged from a real run on tests/tasks/fixtures/third_party/tb2)."""


def test_a_dockerfile_step_failing_in_harbors_build_is_the_tasks_error(tmp_path):
    result = harbor_result("broken", reward=None, exception="RuntimeError")
    result["exception_info"]["exception_message"] = BUILD_FAILURE
    trial = to_trial(result, 0, None, tmp_path, tmp_path)
    assert trial.failure_mode.value == "task_error" and trial.score == 0.0
    assert trial.error.splitlines() == [
        "task broken: its image does not build in Harbor: [main 3/5] RUN pip3 install "
        "pytest==8.4.1 iniconfig==9.0.0",
        "ERROR: No matching distribution found for iniconfig==9.0.0",
    ]
    offline = BUILD_FAILURE.replace(
        "No matching distribution", "Temporary failure in name resolution"
    )
    result["exception_info"]["exception_message"] = offline
    assert to_trial(result, 0, None, tmp_path, tmp_path).failure_mode.value == "infra_error"


def test_timings_tokens_and_turns(tmp_path):
    result = harbor_result()
    assert phase_seconds(result) == {
        "environment_setup": 5.0,
        "agent_setup": 0.0,
        "agent_execution": 10.0,
        "verifier": 4.0,
        "total": 30.0,
    }
    trial = to_trial(result, 0, None, tmp_path, tmp_path)
    assert (trial.agent_seconds, trial.test_seconds, trial.total_seconds) == (10.0, 4.0, 30.0)
    assert (trial.tokens_in, trial.tokens_out, trial.turns) == (100, 20, 3)


def test_a_job_becomes_results_json_with_attempts_in_start_order(tmp_path):
    job = tmp_path / "job"
    for result in (
        harbor_result("t1", 0.0, started="2026-12-06T05:00:02"),
        harbor_result("t1", 1.0, started="2026-12-06T05:00:01"),
        harbor_result("t2", None, exception="DockerError", started="2026-12-06T05:00:03"),
    ):
        (job / result["trial_name"]).mkdir(parents=True)
        (job / result["trial_name"] / "result.json").write_text(json.dumps(result))
    run = read_job(job, RunConfig(policy="oracle", attempts=2), [], tmp_path)
    assert [(t.task_id, t.attempt, t.resolved) for t in run.trials] == [
        ("t1", 0, True),
        ("t1", 1, False),
        ("t2", 0, False),
    ]
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["infra_errors"] == 1 and summary["n_scored"] == 2
    assert summary["accuracy"] == 0.5  # t1 solved once in two; t2 is out of the denominator


def test_an_empty_job_folder_says_harbor_did_not_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="did `harbor run` run"):
        read_job(tmp_path, RunConfig(policy="oracle"), [], tmp_path)
