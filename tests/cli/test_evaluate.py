"""`tbrl eval show|compare` on saved runs, and the errors a user meets (one line each,
through the real entry point)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.evaluate.results import FailureMode, RunConfig, RunResults, TrialResult

runner = CliRunner()


def save_run(path, outcomes: dict[str, bool], policy="oracle"):
    run = RunResults(config=RunConfig(policy=policy, tasks_source="data/tasks", attempts=1))
    for task, ok in outcomes.items():
        run.add(
            TrialResult(
                task_id=task,
                attempt=0,
                resolved=ok,
                score=float(ok),
                failure_mode=FailureMode.resolved if ok else FailureMode.no_action,
            )
        )
    run.save(path)
    return path


def test_show_prints_accuracy_and_interval(tmp_path):
    run = save_run(tmp_path / "a", {"t1": True, "t2": False})
    result = runner.invoke(app, ["eval", "show", str(run)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "50.0%" in result.output and "Wilson 95%" in result.output
    assert "no_action" in result.output


def test_compare_reports_paired_difference(tmp_path):
    a = save_run(tmp_path / "new", {"t1": True, "t2": True, "t3": False})
    b = save_run(tmp_path / "old", {"t1": False, "t2": True, "t3": False}, policy="noop")
    result = runner.invoke(app, ["eval", "compare", str(a), str(b)], terminal_width=200)
    assert result.exit_code == 0, result.output
    # differences [1, 0, 0] -> +33.3 points; 1 task better, 0 worse, 2 tied
    assert "+33.3 pts" in result.output
    assert "1 / 0 / 2" in result.output


def test_compare_names_a_missing_run(tmp_path, tbrl):
    a = save_run(tmp_path / "a", {"t1": True})
    result = tbrl("eval", "compare", a, tmp_path / "nope")
    assert result.code == 1
    assert "no results at" in result.err and len(result.err.splitlines()) == 1


def test_run_without_tasks_says_what_to_pass():
    result = runner.invoke(app, ["eval", "run", "--policy", "noop"])
    assert result.exit_code != 0
    assert "--tasks" in result.output


def test_bare_eval_prints_help():
    result = runner.invoke(app, ["eval"])
    assert result.exit_code == 0
    assert "compare" in result.output and "--tasks" in result.output


@pytest.mark.docker  # the engine check comes first; these refusals come after it
@pytest.mark.parametrize("command", [("eval", "run"), ("eval",)], ids=["run", "shorthand"])
def test_run_refuses_a_bad_policy_spec_before_writing(tmp_path, tbrl, command):
    """`tbrl eval --tasks ...` is `tbrl eval run --tasks ...`: the same options, the same run."""
    out = tmp_path / "run"
    result = tbrl(*command, "--tasks", "data/tasks", "--policy", "gpt5", "--out", out)
    assert result.code == 1
    assert "unknown policy spec 'gpt5'" in result.err
    assert not (out / "results.json").exists()


@pytest.mark.docker
def test_oracle_on_tasks_without_solutions_says_which(tmp_path, tbrl):
    from tbrl_lib.tasks import Environment, Task, Tests, write_tasks

    task = Task(
        id="no-solution",
        instruction="do it",
        environment=Environment(dockerfile="FROM x\n"),
        tests=Tests(pytest="def test_a():\n    pass\n"),
    )
    write_tasks([task], "csv", tmp_path / "tasks.csv", progress=False)
    # both spellings: `tbrl eval run --tasks ...` and the issue's `tbrl eval --tasks ...`
    for prefix in (["eval", "run"], ["eval"]):
        result = tbrl(
            *prefix,
            "--tasks",
            tmp_path / "tasks.csv",
            "--policy",
            "oracle",
            "--out",
            tmp_path / "run",
        )
        assert result.code == 1, prefix
        assert "['no-solution']" in result.err and "solution/solve.sh" in result.err


@pytest.mark.docker
def test_resuming_with_another_policy_is_refused(tmp_path, tbrl):
    out = save_run(tmp_path / "run", {"count-error-lines": True}, policy="oracle")
    # the saved run's tasks_source must match for the policy to be the only difference
    run = RunResults.load(out)
    run.config = run.config.model_copy(update={"tasks_source": "data/tasks"})
    run.save(out)
    result = tbrl("eval", "run", "--tasks", "data/tasks", "--policy", "noop", "--out", out)
    assert result.code == 1
    assert "cannot resume" in result.err and "policy: run has 'oracle', now 'noop'" in result.err


def test_show_reports_infra_errors_apart_and_na_when_nothing_was_scored(tmp_path, tbrl):
    run = RunResults(config=RunConfig(policy="oracle", tasks_source="data/tasks", attempts=1))
    run.add(
        TrialResult(
            task_id="t1", attempt=0, resolved=True, score=1.0, failure_mode=FailureMode.resolved
        )
    )
    run.add(
        TrialResult(
            task_id="t2", attempt=0, resolved=False, score=0.0, failure_mode=FailureMode.infra_error
        )
    )
    run.save(tmp_path / "some")
    out = tbrl("eval", "show", tmp_path / "some").out
    assert "100.0% [20.7%, 100.0%] Wilson 95%" in out  # 1 of 1 scored, not 1 of 2
    assert "1 of 2 trials" in out
    none = RunResults(config=run.config, trials=[run.trials[1]])
    none.save(tmp_path / "none")
    assert "n/a (no trial was scored)" in tbrl("eval", "show", tmp_path / "none").out


def test_show_puts_the_bootstrap_beside_wilson_with_several_attempts(tmp_path, tbrl):
    run = RunResults(config=RunConfig(policy="oracle", tasks_source="data/tasks", attempts=2))
    for task, outcomes in {"t1": (True, True), "t2": (True, False), "t3": (False, False)}.items():
        for attempt, ok in enumerate(outcomes):
            mode = FailureMode.resolved if ok else FailureMode.unresolved
            run.add(
                TrialResult(
                    task_id=task, attempt=attempt, resolved=ok, score=float(ok), failure_mode=mode
                )
            )
    run.save(tmp_path / "run")
    out = tbrl("eval", "show", tmp_path / "run").out
    assert "Wilson 95%; bootstrap over tasks [" in out
