"""What a reward part is: a named score in [0, 1] read from a rollout's evidence.

A part is a function `score(evidence) -> float | Missing` with a flag saying whether it can
be missing (its metrics then carry a `reward/<name>_missing_rate`). The evidence is gathered
once per rollout by `scoring.score_rollout`: the trajectory, the verifier's test report and the
judge's verdict (None when the judge was not called). Left out: a part that needs evidence of
its own (another LLM call, a second run in the container) adds it to `Evidence` and to
`score_rollout`, which gathers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only; the judges' own modules, not their package, which imports
    # `reward.py` (which imports the parts)
    from tbrl_lib.agent.trajectory import Trajectory
    from tbrl_lib.rewards.judges.base import JudgeResult
    from tbrl_lib.rewards.judges.chain import JudgeMissing
    from tbrl_lib.rewards.verifier import TestReport
    from tbrl_lib.tasks.model import Task


@dataclass(frozen=True)
class Evidence:
    """Everything a part may read about one finished rollout."""

    task: Task
    trajectory: Trajectory
    tests: TestReport
    judged: JudgeResult | JudgeMissing | None
    """The judge's verdict, `JudgeMissing` when every judge failed, None when not called."""


@dataclass(frozen=True)
class Missing:
    """A part that has no score for this rollout, and why."""

    reason: str


@dataclass(frozen=True)
class Part:
    """One reward part: how it scores a rollout (a float in [0, 1], or `Missing`)."""

    score: Callable[[Evidence], float | Missing]
    can_be_missing: bool = False
    """Whether `score` may return `Missing` (its metrics then count how often)."""
