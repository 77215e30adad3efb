"""`tbrl eval show|compare` on saved runs, and the errors a user meets."""

from __future__ import annotations

from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.evaluate.results import FailureMode, RunConfig, RunResults, TrialResult

runner = CliRunner()


def save_run(path, outcomes: dict[str, bool], policy="oracle"):
    run = RunResults(config=RunConfig(policy=policy, tasks_source="data/tasks", attempts=1))
    for task, ok in outcomes.items():
        run.add(TrialResult(
            task_id=task, attempt=0, resolved=ok, score=float(ok),
            failure_mode=FailureMode.resolved if ok else FailureMode.no_action,
        ))
    run.save(path)
    return path


def test_show_prints_accuracy_and_interval(tmp_path):
    run = save_run(tmp_path / "a", {"t1": True, "t2": False})
    result = runner.invoke(app, ["eval", "show", str(run)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "50.0%" in result.output and "wilson" in result.output
    assert "no_action" in result.output


def test_compare_reports_paired_difference(tmp_path):
    a = save_run(tmp_path / "new", {"t1": True, "t2": True, "t3": False})
    b = save_run(tmp_path / "old", {"t1": False, "t2": True, "t3": False}, policy="noop")
    result = runner.invoke(app, ["eval", "compare", str(a), str(b)], terminal_width=200)
    assert result.exit_code == 0, result.output
    # differences [1, 0, 0] -> +33.3 points; 1 task better, 0 worse, 2 tied
    assert "+33.3 pts" in result.output
    assert "1 / 0 / 2" in result.output


def test_compare_names_a_missing_run(tmp_path):
    a = save_run(tmp_path / "a", {"t1": True})
    result = runner.invoke(app, ["eval", "compare", str(a), str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no results at" in result.output


def test_run_without_tasks_says_what_to_pass():
    result = runner.invoke(app, ["eval", "run", "--policy", "noop"])
    assert result.exit_code != 0
    assert "--tasks" in result.output


def test_bare_eval_prints_help():
    result = runner.invoke(app, ["eval"])
    assert result.exit_code == 0
    assert "compare" in result.output and "--tasks" in result.output


def test_run_refuses_a_bad_policy_spec_before_writing(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "run", "--tasks", "data/tasks", "--policy", "gpt5",
                                 "--out", str(out)])
    assert result.exit_code == 2
    assert "unknown policy spec 'gpt5'" in result.output
    assert not (out / "results.json").exists()


def test_oracle_on_tasks_without_solutions_says_which(tmp_path):
    from tbrl_lib.tasks import Environment, Task, Tests, write_tasks

    task = Task(id="no-solution", instruction="do it", environment=Environment(dockerfile="FROM x\n"),
                tests=Tests(pytest="def test_a():\n    pass\n"))
    write_tasks([task], "csv", tmp_path / "tasks.csv", progress=False)
    # both spellings: `tbrl eval run --tasks ...` and the issue's `tbrl eval --tasks ...`
    for prefix in (["eval", "run"], ["eval"]):
        result = runner.invoke(app, [*prefix, "--tasks", str(tmp_path / "tasks.csv"),
                                     "--policy", "oracle", "--out", str(tmp_path / "run")])
        assert result.exit_code == 2, prefix
        assert "['no-solution']" in result.output and "solution/solve.sh" in result.output


def test_resuming_with_another_policy_is_refused(tmp_path):
    out = save_run(tmp_path / "run", {"count-error-lines": True}, policy="oracle")
    # the saved run's tasks_source must match for the policy to be the only difference
    run = RunResults.load(out)
    run.config = run.config.model_copy(update={"tasks_source": "data/tasks"})
    run.save(out)
    result = runner.invoke(app, ["eval", "run", "--tasks", "data/tasks", "--policy", "noop",
                                 "--out", str(out)], terminal_width=200)
    assert result.exit_code == 2
    assert "cannot resume" in result.output and "policy: run has 'oracle', now 'noop'" in result.output
