"""A run's callbacks. Console progress: a GRPO step's line from what the step logged, a
held-out result's line, about ten lines over a warm start, and the trainer's own display
replaced by them (a real run's captured lines: tests/train/test_tracking.py). Metric names,
the metrics file and the early stop."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_callback import ProgressCallback
from transformers.utils.notebook import NotebookProgressCallback

from tbrl_lib.step_progress import SECONDS_PER_STEP, StepProgress, duration, heldout_line
from tbrl_lib.train.report.callbacks import (
    TRAINER_DISPLAYS,
    CurriculumStop,
    MetricsWriter,
    SFTLines,
    StepClock,
    StepLines,
    metric_name,
    step_record,
    use_progress_lines,
)
from tbrl_lib.train.step.curriculum import Curriculum

STEP_LOGS = {
    "loss": 0.01,
    "reward": 0.6855,
    "reward/tests": 0.75,
    "reward/judge": 0.4,
    "reward/solved_rate": 0.75,
    "frac_reward_zero_std": 0.25,
    "sampling/refilled_groups": 1.0,
    "rollout/infra_error_rate": 0.0,
}


def line(step: int, total: int, logs: dict) -> str:
    """The console line of a step that logged `logs`, read from its metrics.jsonl row."""
    return StepProgress.from_row(step_record(step, logs), total).line()


def test_a_step_line_has_the_reward_its_parts_and_the_time_left():
    with_clock = {**STEP_LOGS, "reward/judge_missing_rate": 0.0, SECONDS_PER_STEP: 40.0}
    assert line(3, 12, with_clock) == (
        "grpo step 3/12  reward 0.69 (tests 0.75, judge 0.40)  solved 0.75  zero-std 0.25  "
        "refills 1  40.0 s/step  ETA 6m00s"
    )
    # what a step did not log is left out, never shown as 0; infra errors only when there are
    bare = line(1, 2, {"loss": 0.1, "rollout/infra_error_rate": 0.5})
    assert bare == "grpo step 1/2  infra errors 0.50"
    assert line(1, 2, {"loss": 0.1, "rollout/infra_error_rate": 0.0}) == "grpo step 1/2"


def test_the_clock_logs_the_mean_seconds_of_this_sessions_steps(monkeypatch):
    """A resumed run (first step 4) counts only the steps it ran itself."""
    now = iter([100.0, 130.0, 190.0])
    monkeypatch.setattr("tbrl_lib.train.report.callbacks.time.monotonic", lambda: next(now))
    sink: dict[str, float] = {}
    clock = StepClock(sink)
    args, control = TrainingArguments(output_dir="/tmp/unused", report_to=[]), TrainerControl()
    clock.on_train_begin(args, _state(4, 10), control)
    clock.on_step_end(args, _state(5, 10), control)
    assert sink == {SECONDS_PER_STEP: 30.0}
    clock.on_step_end(args, _state(6, 10), control)
    assert sink == {SECONDS_PER_STEP: 45.0}


def test_a_heldout_line_has_the_interval_and_leaves_out_what_is_not_a_number():
    metrics = {
        "eval/solve_rate": 2 / 3,
        "eval/accuracy_ci_low": 0.2077,
        "eval/accuracy_ci_high": 0.9385,
        "eval/mean_reward": 0.5,
    }
    assert heldout_line("warm start", metrics) == (
        "held-out warm start: solve rate 0.67 [0.21, 0.94]  mean reward 0.50"
    )
    nothing = {"eval/solve_rate": float("nan"), "eval/mean_reward": float("nan")}
    assert heldout_line("base", nothing) == "held-out base: solve rate n/a"


def test_durations_read_at_a_glance():
    assert [duration(s) for s in (4.4, 370, 7500)] == ["4s", "6m10s", "2h05m"]


def _state(step: int, max_steps: int) -> TrainerState:
    state = TrainerState()
    state.global_step, state.max_steps = step, max_steps
    return state


def test_step_lines_print_each_step_and_the_heldout_result_logged_with_it():
    printed: list[str] = []
    lines = StepLines(printer=lambda text, flush: printed.append(text))
    args, control = TrainingArguments(output_dir="/tmp/unused", report_to=[]), TrainerControl()
    lines.on_log(args, _state(1, 2), control, logs=dict(STEP_LOGS))
    lines.on_log(args, _state(2, 2), control, logs={**STEP_LOGS, "eval/solve_rate": 1.0})
    lines.on_log(args, _state(2, 2), control, logs={"train_runtime": 9.0})  # the summary: no line
    assert [p.split("  ")[0] for p in printed] == [
        "grpo step 1/2",
        "grpo step 2/2",
        "held-out step 2: solve rate 1.00",
    ]


def test_sft_lines_are_about_ten_over_a_long_warm_start():
    printed: list[str] = []
    lines = SFTLines(printer=lambda text, flush: printed.append(text))
    args, control = TrainingArguments(output_dir="/tmp/unused", report_to=[]), TrainerControl()
    for step in range(1, 385):
        lines.on_log(args, _state(step, 384), control, logs={"loss": 1.0 / step})
    assert 10 <= len(printed) <= 12
    short: list[str] = []
    lines = SFTLines(printer=lambda text, flush: short.append(text))
    for step in range(1, 49):
        lines.on_log(args, _state(step, 48), control, logs={"loss": 1.0})
    assert 10 <= len(short) <= 12 and short[-1].startswith("sft step 48/48")
    assert printed[0] == "sft step 1/384  loss 1.000"
    assert printed[-1] == "sft step 384/384  loss 0.003"


@pytest.mark.parametrize("display", [ProgressCallback, NotebookProgressCallback])
def test_the_trainers_own_display_is_replaced(tmp_path, monkeypatch, display):
    """A bar on a console, and in a notebook kernel the table with a row per logged step."""
    import torch
    import transformers.trainer
    from transformers import Trainer

    monkeypatch.setattr(transformers.trainer, "DEFAULT_PROGRESS_CALLBACK", display)
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    trainer = Trainer(model=torch.nn.Linear(2, 2), args=args)
    assert any(isinstance(c, display) for c in trainer.callback_handler.callbacks)
    lines = StepLines()
    use_progress_lines(trainer, lines)
    callbacks = trainer.callback_handler.callbacks
    assert lines in callbacks and not any(isinstance(c, TRAINER_DISPLAYS) for c in callbacks)


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


def test_training_stops_when_every_task_is_filtered():
    cur = Curriculum({"a": "easy"}, filter_after_groups=1)
    stop = CurriculumStop(cur)
    control = stop.on_step_end(None, None, TrainerControl())
    assert not control.should_training_stop
    cur.record_group("a", [0.0, 0.0], [False, False])
    control = stop.on_step_end(None, None, TrainerControl())
    assert control.should_training_stop and "a: never solved" in stop.reason
