"""Metric names, the metrics file, the reward plot and the early stop."""

from __future__ import annotations

import json
from types import SimpleNamespace

from transformers import TrainerControl

from tbrl_lib.train.report.reporting import (
    CURVES,
    CurriculumStop,
    MetricsWriter,
    heldout_points,
    metric_name,
    plot_rewards,
)
from tbrl_lib.train.rollouts.curriculum import Curriculum


def test_trl_names_go_under_train_and_ours_stay():
    assert metric_name("loss") == "train/loss"
    assert metric_name("completions/mean_length") == "train/completions/mean_length"
    assert (
        metric_name("rollout/turns") == "rollout/turns"
        and metric_name("sandbox/commands") == "sandbox/commands"
    )


def test_metrics_writer_appends_numbers_with_step(tmp_path):
    """The curriculum's numbers arrive in `logs` (the trainer logs them): written as given."""
    writer = MetricsWriter(tmp_path / "m.jsonl")
    logs = {"loss": "0.5", "reward/total": 0.25, "curriculum/active_tasks": 1}
    writer.on_log(None, SimpleNamespace(global_step=3), None, logs=logs)
    writer.on_log(
        None, SimpleNamespace(global_step=3), None, logs={"train_runtime": 1.0}
    )  # end-of-run summary
    lines = (tmp_path / "m.jsonl").read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert (
        record["step"] == 3
        and record["train/loss"] == 0.5
        and record["curriculum/active_tasks"] == 1.0
    )


def test_plot_is_written_with_and_without_points(tmp_path):
    assert (
        plot_rewards([{"step": 1, "reward/total": 0.5}], tmp_path / "a.png").stat().st_size > 1000
    )
    assert plot_rewards([], tmp_path / "b.png").is_file()
    records = [{"step": 1, "reward/total": 0.2}, {"step": 2, "eval/solve_rate": 0.75}]
    before = {"base": {"eval/solve_rate": 0.0}, "warm start": {"eval/solve_rate": 0.25}}
    assert plot_rewards(records, tmp_path / "c.png", before).stat().st_size > 1000


def test_reward_components_each_have_their_own_line_style():
    styles = [tuple(sorted(style.items())) for _, _, style in CURVES]
    assert len(set(styles)) == len(CURVES)
    for key in ("color", "linestyle", "marker"):  # tests == solved share must still show both
        assert len({style[key] for _, _, style in CURVES}) == len(CURVES), key


def test_models_evaluated_before_grpo_are_the_curves_step_0_with_intervals():
    records = [
        {
            "step": 1,
            "eval/solve_rate": 0.5,
            "eval/accuracy_ci_low": 0.2,
            "eval/accuracy_ci_high": 0.8,
        },
        {"step": 2},
        {"step": 3, "eval/solve_rate": 1},
    ]
    before = {
        "base": {
            "eval/solve_rate": 0.0,
            "eval/accuracy_ci_low": 0.0,
            "eval/accuracy_ci_high": 0.24,
        },
        "warm start": {"eval/solve_rate": 0.25},
    }
    assert heldout_points(records, before) == [
        (0, 0.0, 0.0, 0.24, "base"),
        (0, 0.25, None, None, "warm start"),
        (1, 0.5, 0.2, 0.8, ""),
        (3, 1, None, None, ""),
    ]
    assert [p.step for p in heldout_points(records)] == [1, 3]  # a resumed run: none before


def test_training_stops_when_every_task_is_filtered():
    cur = Curriculum({"a": "easy"}, filter_after_groups=1)
    stop = CurriculumStop(cur)
    control = stop.on_step_end(None, None, TrainerControl())
    assert not control.should_training_stop
    cur.record_group("a", [0.0, 0.0], [False, False])
    control = stop.on_step_end(None, None, TrainerControl())
    assert control.should_training_stop and "a: never solved" in stop.reason
