"""Progress a person can read: one console line per optimizer step, per held-out evaluation,
and a few per warm start, printed to stdout (a notebook cell's output; `tbrl demo` streams it).

    grpo step 3/12  reward 0.52 (tests 0.60, judge 0.35)  solved 0.50  zero-std 0.25  refills 1  41.2 s/step  ETA 6m10s
    held-out warm start: solve rate 0.33 [0.06, 0.79]  mean reward 0.41
    sft step 40/384  loss 1.204

`StepLines` is the TrainerCallback of a GRPO run: it reads the numbers the step logged (TRL's
`reward`, `frac_reward_zero_std`; tbrl's `reward/…`, `sampling/…`, `eval/…`) in `on_log`, so
a line says exactly what the trackers got. `SFTLines` prints about ten lines over a warm
start. `use_progress_lines` puts one in place of the trainer's own progress display (a tqdm
bar, or in a notebook a table with a row per logged step). Only process 0 prints. Left out:
the per-step rollouts bar (`rollouts/step_rollouts.py`) and the evaluation harness's own output.
"""

from __future__ import annotations

import math
import time
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils.notebook import NotebookProgressCallback

TRAINER_DISPLAYS = (ProgressCallback, NotebookProgressCallback, PrinterCallback)
"""What transformers shows on its own: a bar, a notebook table, or each log dict printed."""


def duration(seconds: float) -> str:
    """`42s`, `6m10s`, `2h05m`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _num(value: Any) -> float | None:
    """A finite number, else None (a part to leave out)."""
    ok = isinstance(value, int | float) and math.isfinite(value)
    return float(value) if ok else None


def heldout_line(name: str, metrics: dict[str, Any]) -> str:
    """One held-out evaluation (`eval/…` metrics of `heldout.evaluate_policy`)."""
    rate = _num(metrics.get("eval/solve_rate"))
    low, high = (
        _num(metrics.get("eval/accuracy_ci_low")),
        _num(metrics.get("eval/accuracy_ci_high")),
    )
    mean = _num(metrics.get("eval/mean_reward"))
    line = f"held-out {name}: solve rate " + ("n/a" if rate is None else f"{rate:.2f}")
    if low is not None and high is not None:
        line += f" [{low:.2f}, {high:.2f}]"
    if mean is not None:
        line += f"  mean reward {mean:.2f}"
    return line


def step_line(step: int, total: int, logs: dict[str, Any], seconds: float | None) -> str:
    """One GRPO step from the numbers it logged; parts the step did not log are left out."""
    parts = [f"grpo step {step}/{total}"]
    reward = _num(logs.get("reward"))
    if reward is not None:
        pieces = [
            f"{name} {value:.2f}"
            for name, value in (
                ("tests", _num(logs.get("reward/tests"))),
                ("judge", _num(logs.get("reward/judge"))),
            )
            if value is not None
        ]
        parts.append(f"reward {reward:.2f}" + (f" ({', '.join(pieces)})" if pieces else ""))
    for label, key, fmt in (
        ("solved", "reward/solved_rate", "{:.2f}"),
        ("zero-std", "frac_reward_zero_std", "{:.2f}"),
        ("refills", "sampling/refilled_groups", "{:.0f}"),
        ("infra errors", "rollout/infra_error_rate", "{:.2f}"),
    ):
        value = _num(logs.get(key))
        if value is not None and not (label == "infra errors" and value == 0):
            parts.append(f"{label} {fmt.format(value)}")
    if seconds is not None:
        parts.append(f"{seconds:.1f} s/step")
        parts.append(f"ETA {duration(seconds * max(0, total - step))}")
    return "  ".join(parts)


class StepLines(TrainerCallback):
    """A GRPO run's console lines: one per logged step, one per held-out evaluation in it.
    The ETA uses the mean time of the steps this session ran (a resumed run starts over)."""

    def __init__(self, printer=print) -> None:
        self.printer = printer
        self.started: float | None = None
        self.first_step = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.started, self.first_step = time.monotonic(), state.global_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "train_runtime" in logs or not state.is_world_process_zero:
            return
        done = state.global_step - self.first_step
        seconds = (time.monotonic() - self.started) / done if self.started and done else None
        self.printer(step_line(state.global_step, state.max_steps, logs, seconds), flush=True)
        if logs.get("eval/solve_rate") is not None:
            self.printer(heldout_line(f"step {state.global_step}", logs), flush=True)


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
