"""A run's own trainer callbacks, one module: what a step does at its end beside TRL's work.

    StepLines        one console line per optimizer step, and one per held-out evaluation in it
    StepClock        the mean seconds per step, logged with each step (the ETA)
    MetricsWriter    the step's numbers into `metrics.jsonl`
    CurriculumStop   ends training once the curriculum has skipped every task
    CheckpointState  `tbrl_state.json` into every checkpoint TRL saves (`plan/resume.py`)
    SFTLines         a warm start's console lines

The session (`grpo/session.py`) makes `StepClock`, `MetricsWriter` and `CurriculumStop`, the trainer (`grpo/trainer.py`) adds
`CheckpointState` and puts `StepLines` in place of its own display; the warm start
(`warm_start/sft.py`) takes `SFTLines`. Left out: the held-out evaluation during training
(`heldout/evaluator.py`: it runs the harness), and what is drawn or read back from a
run folder (`reporting.py`).

The console lines
-----------------
Progress a person can read: one console line per optimizer step, per held-out evaluation,
and a few per warm start, printed to stdout (a notebook cell's output; `tbrl demo` streams it).

    grpo step 3/12  reward 0.52 (tests 0.60, judge 0.35)  solved 0.50  zero-std 0.25  refills 1  41.2 s/step  ETA 6m10s
    held-out warm start: solve rate 0.33 [0.06, 0.79]  mean reward 0.41
    sft step 40/384  loss 1.204

`StepLines` reads the numbers the step logged (TRL's `reward`, `frac_reward_zero_std`;
tbrl's `reward/…`, `sampling/…`, `eval/…`, `progress/…`) in `on_log`, as the step's
`metrics.jsonl` row (`step_record`), through `tbrl_lib.step_progress`: a line says exactly
what the trackers got, and the notebook's live panel, which follows `metrics.jsonl`, shows
the same numbers. `SFTLines` prints about ten lines over a warm start. `use_progress_lines` puts
one in place of the trainer's own progress display (a tqdm bar, or in a notebook a table
with a row per logged step). Only process 0 prints. Left out: the per-step rollouts bar
(`step/runner.py`) and the evaluation harness's own output.

metrics.jsonl
-------------
Metric names (one line per logging step):

    train/…       TRL's own numbers (loss, grad_norm, learning_rate, entropy, completions/…,
                  rewards/tbrl_total/mean, rewards/tbrl_<part>/mean for each reward part,
                  frac_reward_zero_std, step_time, …)
    rollout/…     episodes: count, turns, seconds, completion/assistant tokens,
                  infra_error_rate, termination/<reason> shares
    reward/…      total (the reward: 65% tests + 35% judge by default), each reward part
                  the run weighs (`rewards/parts`: tests, the weighted test score; judge;
                  budget, ...), <part>_missing_rate for parts that can be missing,
                  solved_rate (all tests passed); scored rollouts only
    judge/…       cost_usd (judge spend of the step's rollouts)
    sandbox/…     per-rollout container numbers (startup_seconds, commands, command_seconds, …)
    curriculum/…  active_tasks, skipped_tasks, retried_tasks, mean_solve_rate
    sampling/…    dynamic sampling: zero_std_groups (share before refill), zero_std_after,
                  refilled_groups, refill_rollouts
    eval/…        held-out evaluation at that step (solve_rate, mean_reward, accuracy_ci_*)
    progress/…    seconds_per_step (mean wall time of the steps this session ran: the ETA)

With several processes every number above covers all of them (tbrl gathers its own; TRL
gathers its own) and process 0 alone writes the file. A resumed run keeps the lines up to its
checkpoint's step and appends after them (`MetricsWriter(resume_step=...)`). Every number
reaches the file through the trainer's own log (`SessionTrainer.log`), so the trackers
`grpo.report_to` names (TensorBoard, W&B, trackio) get the same numbers at the same steps.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils.notebook import NotebookProgressCallback

from tbrl_lib.step_progress import SECONDS_PER_STEP, StepProgress
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.plan.resume import write_state
from tbrl_lib.train.step.curriculum import Curriculum
from tbrl_lib.train.step.hooks import require_same_on_every_process

TRAINER_DISPLAYS = (ProgressCallback, NotebookProgressCallback, PrinterCallback)
"""What transformers shows on its own: a bar, a notebook table, or each log dict printed."""

# The console lines.


class StepLines(TrainerCallback):
    """A GRPO run's console lines: one per logged step, one per held-out evaluation in it,
    read from the step's `metrics.jsonl` row (`step_progress`: the notebook's live panel
    reads the same rows)."""

    def __init__(self, printer=print) -> None:
        self.printer = printer

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "train_runtime" in logs or not state.is_world_process_zero:
            return
        progress = StepProgress.from_row(step_record(state.global_step, logs), state.max_steps)
        self.printer(progress.line(), flush=True)
        if (heldout := progress.heldout_line()) is not None:
            self.printer(heldout, flush=True)


class StepClock(TrainerCallback):
    """Puts `progress/seconds_per_step` (the mean wall time of the steps this session ran;
    a resumed run starts over) into the numbers the trainer logs with each step (`sink`:
    the session's `tracked`), so the console line, `metrics.jsonl`, the trackers and the
    notebook's panel get one ETA. Runs after the held-out evaluation of the step."""

    def __init__(self, sink: dict[str, float]) -> None:
        self.sink = sink
        self.started: float | None = None
        self.first_step = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.started, self.first_step = time.monotonic(), state.global_step

    def on_step_end(self, args, state, control, **kwargs):
        done = state.global_step - self.first_step
        if self.started is not None and done > 0:
            self.sink[SECONDS_PER_STEP] = (time.monotonic() - self.started) / done


class SFTLines(TrainerCallback):
    """A warm start's console lines (step/total, loss): the first step, every
    `max_steps / lines`-th and the last; at most `lines` + 2."""

    def __init__(self, lines: int = 10, printer=print) -> None:
        self.lines, self.printer = lines, printer

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "loss" not in logs or not state.is_world_process_zero:
            return
        every = max(1, math.ceil(state.max_steps / self.lines))
        step = state.global_step
        if step % every and step != state.max_steps and step != 1:
            return
        self.printer(f"sft step {step}/{state.max_steps}  loss {logs['loss']:.3f}", flush=True)


def use_progress_lines(trainer: Any, lines: TrainerCallback) -> None:
    """Show `lines` instead of the trainer's own progress display."""
    for display in TRAINER_DISPLAYS:
        trainer.remove_callback(display)
    trainer.add_callback(lines)


# metrics.jsonl, the curriculum's stop, the checkpoint's state.

OWN_PREFIXES = (
    "rollout/",
    "reward/",
    "judge/",
    "sandbox/",
    "curriculum/",
    "eval/",
    "sampling/",
    "progress/",
)
"""Metric prefixes of tbrl's own numbers; the rest is TRL's (`train/…`)."""


def metric_name(key: str) -> str:
    """Our prefixes stay; everything TRL logs goes under `train/`."""
    return key if key.startswith(OWN_PREFIXES) else f"train/{key}"


def step_record(step: int, logs: dict[str, Any]) -> dict[str, Any]:
    """A step's log as a `metrics.jsonl` row: `step`, then every number by its metric name."""
    return {"step": step, **{metric_name(key): _number(value) for key, value in logs.items()}}


class MetricsWriter(TrainerCallback):
    """Appends every TRL log (plus `step`) to `metrics.jsonl` with prefixed names; only the
    `main` process writes. With `resume_step`, lines up to that step are kept, later ones
    (logged after the checkpoint by the run that died) dropped; else the file starts empty."""

    def __init__(self, path: Path, resume_step: int | None = None, main: bool = True) -> None:
        self.path, self.main = path, main
        self.records: list[dict[str, Any]] = []
        if resume_step is not None and path.is_file():
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            self.records = [r for r in lines if r.get("step", 0) <= resume_step]
        if main:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r, default=str) + "\n" for r in self.records))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "train_runtime" in logs:
            return
        record = step_record(state.global_step, logs)
        self.records.append(record)
        if self.main:
            with self.path.open("a") as fh:
                fh.write(json.dumps(record, default=str) + "\n")


class CheckpointState(TrainerCallback):
    """Writes `tbrl_state.json` (see `resume.py`) into every checkpoint TRL saves: the run's
    settings and `parts()` (name -> state dict: curriculum, sampler, runner counters)."""

    def __init__(self, config: TrainConfig, parts: Callable[[], dict[str, Any]]) -> None:
        self.config, self.parts = config, parts

    def on_save(self, args, state, control, **kwargs):
        parts = self.parts()
        require_same_on_every_process(parts, state.global_step)
        if args.should_save:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            payload = {"step": state.global_step, "config": self.config.to_dict()}
            write_state(folder, {**payload, **parts})
        return control


class CurriculumStop(TrainerCallback):
    """Ends training when the curriculum has skipped every task (nothing left to learn from);
    `reason` then says why."""

    def __init__(self, curriculum: Curriculum) -> None:
        self.curriculum = curriculum
        self.reason: str | None = None

    def on_step_end(self, args, state, control, **kwargs):
        if not self.curriculum.active():
            reasons = "; ".join(f"{t}: {why}" for t, why in self.curriculum.skipped().items())
            self.reason = f"every task is filtered out ({reasons})"
            control.should_training_stop = True
        return control


def _number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
