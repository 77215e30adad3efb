"""results.json: summary numbers, atomic saves, resume rules."""

from __future__ import annotations

import json
import math

import pytest

from tbrl_lib.evaluate.report import accuracy_text
from tbrl_lib.evaluate.results import (
    ConfigMismatch,
    FailureMode,
    RunConfig,
    RunResults,
    TrialResult,
    eval_metrics,
    summarize,
)
from tbrl_lib.evaluate.stats import wilson_interval


def trial(task, attempt, resolved, mode=None, **kw):
    mode = mode or (FailureMode.resolved if resolved else FailureMode.unresolved)
    return TrialResult(
        task_id=task,
        attempt=attempt,
        resolved=resolved,
        score=1.0 if resolved else 0.0,
        failure_mode=mode,
        **kw,
    )


CONFIG = RunConfig(policy="oracle", tasks_source="data/tasks", attempts=2)


def test_summary_of_two_attempts():
    # a: 2/2, b: 1/2, c: 0/2 -> rates 1, .5, 0 -> accuracy 0.5
    # pass@1 = mean(1, .5, 0) = 0.5; pass@2 = mean(1, 1 - C(1,2)/C(2,2) = 1, 0) = 2/3
    trials = [
        trial("a", 0, True, difficulty="easy", category="files", tokens_in=10, turns=2),
        trial("a", 1, True, difficulty="easy", category="files", tokens_in=20, turns=4),
        trial("b", 0, True, difficulty="hard", category="files"),
        trial("b", 1, False, FailureMode.agent_timeout, difficulty="hard", category="files"),
        trial("c", 0, False, FailureMode.no_action, difficulty="hard", category="net"),
        trial("c", 1, False, FailureMode.unresolved, difficulty="hard", category="net"),
    ]
    s = summarize(trials, CONFIG)
    assert s["n_tasks"] == 3 and s["n_trials"] == 6 and s["n_scored"] == 6
    assert s["accuracy"] == pytest.approx(0.5)
    assert s["pass_at_k"] == {"1": pytest.approx(0.5), "2": pytest.approx(2 / 3)}
    # Wilson over tasks (1.5 of 3), the bootstrap over tasks beside it
    assert s["accuracy_ci"] == pytest.approx(wilson_interval(1.5, 3))
    assert s["accuracy_ci_bootstrap"][0] < 0.5 < s["accuracy_ci_bootstrap"][1]
    assert s["by_difficulty"]["easy"]["accuracy"] == 1.0
    assert s["by_difficulty"]["hard"]["accuracy"] == pytest.approx(0.25)
    assert s["by_category"]["net"]["accuracy"] == 0.0
    assert s["failure_modes"]["resolved"] == 3
    assert s["failure_modes"]["agent_timeout"] == 1
    assert s["failure_modes"]["no_action"] == 1
    assert s["infra_errors"] == 0
    assert s["failure_modes"]["parse_error"] == 0
    assert s["tokens_in"]["max"] == 20
    assert s["per_task"] == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert "Terminal-Bench rules" in s["timeouts"]


def test_summary_with_one_attempt_has_wilson_and_no_bootstrap():
    s = summarize([trial("a", 0, True), trial("b", 0, False)], CONFIG)
    assert s["accuracy_ci"] == pytest.approx(wilson_interval(1, 2))
    assert s["accuracy_ci_bootstrap"] is None
    assert list(s["pass_at_k"]) == ["1"]


def test_three_of_three_is_never_a_zero_width_interval():
    # the issue: with attempts > 1 the interval was a bootstrap that collapsed to [100, 100]
    trials = [trial(task, a, True) for task in ("a", "b", "c") for a in (0, 1)]
    s = summarize(trials, CONFIG)
    low, high = s["accuracy_ci"]
    assert (round(100 * low, 1), high) == (43.9, 1.0)
    assert s["accuracy_ci_bootstrap"] == [1.0, 1.0]  # reported beside Wilson, never alone
    text = accuracy_text(s)
    assert "[43.9%, 100.0%] Wilson 95%" in text and "zero width" in text


def test_infra_errors_are_counted_apart_not_in_the_denominator():
    # 67 of 84 trials lost to an engine restart once read "accuracy 20.2%"
    infra = FailureMode.infra_error
    trials = [
        trial("a", 0, True),
        trial("b", 0, False),
        trial("c", 0, False, infra),
        trial("d", 0, False, infra),
    ]
    s = summarize(trials, CONFIG)
    assert s["accuracy"] == 0.5 and s["n_tasks"] == 2 and s["n_scored"] == 2
    assert s["infra_errors"] == 2 and s["unscored_tasks"] == ["c", "d"]
    assert s["failure_modes"]["infra_error"] == 2
    assert s["accuracy_ci"] == pytest.approx(wilson_interval(1, 2))
    assert eval_metrics(s)["eval/infra_errors"] == 2


def test_task_errors_are_counted_apart_with_their_reason():
    broken = FailureMode.task_error
    why = "task b: Dockerfile build failed at step 2 `RUN pip3 install x==9` exited 1: ERROR: ...\nengine: ..."
    trials = [trial("a", 0, True), trial("b", 0, False, broken, error=why)]
    s = summarize(trials, CONFIG)
    assert s["accuracy"] == 1.0 and s["n_scored"] == 1 and s["infra_errors"] == 0
    assert s["task_errors"] == 1 and s["task_error_tasks"] == {"b": why.split("\n")[0]}
    assert s["unscored_tasks"] == ["b"] and eval_metrics(s)["eval/task_errors"] == 1


def test_every_trial_infra_is_not_applicable_rather_than_zero():
    s = summarize([trial("a", 0, False, FailureMode.infra_error)], CONFIG)
    assert s["accuracy"] is None and s["accuracy_ci"] is None and s["n_scored"] == 0
    assert accuracy_text(s).startswith("n/a")
    metrics = eval_metrics(s)
    assert math.isnan(metrics["eval/accuracy"]) and metrics["eval/failure/infra_error"] == 1.0


def test_scaled_timeouts_are_flagged():
    s = summarize([trial("a", 0, True)], CONFIG.model_copy(update={"timeout_scale": 2.0}))
    assert "NOT comparable" in s["timeouts"] and s["timeout_scale"] == 2.0


def test_save_is_atomic_and_reloads(tmp_path):
    run = RunResults.open(tmp_path, CONFIG)
    run.add(trial("b", 0, False))
    run.add(trial("a", 0, True))
    run.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temp file left
    loaded = RunResults.load(tmp_path)
    assert [t.key for t in loaded.trials] == [("a", 0), ("b", 0)]
    assert loaded.summary["accuracy"] == 0.5
    assert json.loads((tmp_path / "results.json").read_text())["config"]["policy"] == "oracle"


def test_add_replaces_same_key():
    run = RunResults(config=CONFIG)
    run.add(trial("a", 0, False, FailureMode.infra_error))
    run.add(trial("a", 0, True))
    assert len(run.trials) == 1 and run.trials[0].resolved


def test_resume_keeps_finished_trials_and_drops_infra_and_task_errors(tmp_path):
    run = RunResults.open(tmp_path, CONFIG)
    run.add(trial("a", 0, True))
    run.add(trial("b", 0, False, FailureMode.infra_error))
    run.add(trial("c", 0, False, FailureMode.task_error))
    run.save(tmp_path)
    resumed = RunResults.open(tmp_path, CONFIG.model_copy(update={"attempts": 3, "concurrency": 4}))
    assert set(resumed.done()) == {("a", 0)}
    assert resumed.config.attempts == 3


@pytest.mark.parametrize(
    ("field", "value"),
    [("policy", "noop"), ("tasks_source", "other.csv"), ("timeout_scale", 0.5)],
)
def test_resume_with_a_different_config_is_refused(tmp_path, field, value):
    run = RunResults.open(tmp_path, CONFIG)
    run.add(trial("a", 0, True))
    run.save(tmp_path)
    with pytest.raises(ConfigMismatch, match=f"{field}: run has .*new --out directory"):
        RunResults.open(tmp_path, CONFIG.model_copy(update={field: value}))


def test_open_rejects_a_foreign_file(tmp_path):
    (tmp_path / "results.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a tbrl results file"):
        RunResults.open(tmp_path, CONFIG)


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="tbrl eval run"):
        RunResults.load(tmp_path)


def test_eval_metrics_are_flat_and_prefixed():
    # 1 of 2 tasks resolved; one no_action -> failure share 0.5
    s = summarize([trial("a", 0, True), trial("b", 0, False, FailureMode.no_action)], CONFIG)
    m = eval_metrics(s)
    assert all(k.startswith("eval/") for k in m)
    assert m["eval/accuracy"] == 0.5 and m["eval/pass@1"] == 0.5
    assert m["eval/failure/no_action"] == 0.5 and m["eval/failure/resolved"] == 0.5
