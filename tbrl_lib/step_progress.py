"""A GRPO step's progress as a person reads it, from one row of a run's `metrics.jsonl`.

Two readers show a run's progress and must agree: the console line each step prints
(`train/report/callbacks.StepLines`) and the live panel that follows a run folder in
JupyterLab (`notebook_tools.training_progress`). Both build `StepProgress.from_row` from the
same row, the one `MetricsWriter` appends (metric names as in `metrics.jsonl`: TRL's under
`train/`, tbrl's own under theirs), so a number on the panel is the number on the line:

    grpo step 3/12  reward 0.52 (tests 0.60, judge 0.35)  solved 0.50  zero-std 0.25  refills 1  41.2 s/step  ETA 6m10s
    held-out step 3: solve rate 0.33 [0.06, 0.79]  mean reward 0.41

The reward parts are the row's `reward/<name>` numbers other than the total, the solved
share and the missing rates, in the row's order (`rewards.reward.step_metrics` writes them
in the run's part order). The ETA is `progress/seconds_per_step` (the mean wall time of the
steps this training session ran, measured by `callbacks.StepClock`) times the steps left.
Standard library only: training and the notebooks' helpers both import it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SECONDS_PER_STEP = "progress/seconds_per_step"
"""The metric the ETA comes from: mean wall seconds per optimizer step this session."""
_NOT_PARTS = ("total", "solved_rate")


def duration(seconds: float) -> str:
    """`42s`, `6m10s`, `2h05m`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def number(value: Any) -> float | None:
    """A finite number, else None (a part to leave out)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def reward_parts(row: Mapping[str, Any]) -> dict[str, float]:
    """Part name -> score of the step's scored rollouts, in the row's order."""
    parts = {}
    for key, value in row.items():
        name = key.removeprefix("reward/")
        if name == key or name in _NOT_PARTS or name.endswith(("_missing_rate", "_missing")):
            continue
        if (score := number(value)) is not None:
            parts[name] = score
    return parts


def heldout_line(name: str, metrics: Mapping[str, Any]) -> str:
    """One held-out evaluation (`eval/…` metrics of `heldout.evaluate_policy`)."""
    rate = number(metrics.get("eval/solve_rate"))
    low = number(metrics.get("eval/accuracy_ci_low"))
    high = number(metrics.get("eval/accuracy_ci_high"))
    mean = number(metrics.get("eval/mean_reward"))
    line = f"held-out {name}: solve rate " + ("n/a" if rate is None else f"{rate:.2f}")
    if low is not None and high is not None:
        line += f" [{low:.2f}, {high:.2f}]"
    if mean is not None:
        line += f"  mean reward {mean:.2f}"
    return line


@dataclass(frozen=True)
class StepProgress:
    """What one step's row says about the run; None where the step did not log it."""

    step: int
    total: int
    reward: float | None = None
    """TRL's `train/reward`: the weighted reward functions' mean, what GRPO optimises."""
    parts: dict[str, float] = field(default_factory=dict)
    solved: float | None = None
    zero_std: float | None = None
    refills: float | None = None
    infra_errors: float | None = None
    seconds_per_step: float | None = None
    heldout: float | None = None
    """The held-out solve rate, when this step ran a held-out evaluation."""
    row: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], total: int) -> StepProgress:
        return cls(
            step=int(row.get("step", 0)),
            total=total,
            reward=number(row.get("train/reward")),
            parts=reward_parts(row),
            solved=number(row.get("reward/solved_rate")),
            zero_std=number(row.get("train/frac_reward_zero_std")),
            refills=number(row.get("sampling/refilled_groups")),
            infra_errors=number(row.get("rollout/infra_error_rate")),
            seconds_per_step=number(row.get(SECONDS_PER_STEP)),
            heldout=number(row.get("eval/solve_rate")),
            row=row,
        )

    @property
    def eta_seconds(self) -> float | None:
        if self.seconds_per_step is None:
            return None
        return self.seconds_per_step * max(0, self.total - self.step)

    def line(self) -> str:
        """The console line; parts the step did not log are left out, never shown as 0."""
        parts = [f"grpo step {self.step}/{self.total}"]
        if self.reward is not None:
            pieces = ", ".join(f"{name} {value:.2f}" for name, value in self.parts.items())
            parts.append(f"reward {self.reward:.2f}" + (f" ({pieces})" if pieces else ""))
        for label, value, fmt in (
            ("solved", self.solved, "{:.2f}"),
            ("zero-std", self.zero_std, "{:.2f}"),
            ("refills", self.refills, "{:.0f}"),
            ("infra errors", self.infra_errors or None, "{:.2f}"),  # only when there are
        ):
            if value is not None:
                parts.append(f"{label} {fmt.format(value)}")
        if self.seconds_per_step is not None and self.eta_seconds is not None:
            parts.append(f"{self.seconds_per_step:.1f} s/step")
            parts.append(f"ETA {duration(self.eta_seconds)}")
        return "  ".join(parts)

    def heldout_line(self) -> str | None:
        """The held-out line of this step, when it ran an evaluation."""
        ran = "eval/solve_rate" in self.row
        return heldout_line(f"step {self.step}", self.row) if ran else None
