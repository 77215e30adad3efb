"""Combining the test score and the judge score into one reward, keeping the breakdown.

    total = w_tests * tests + w_judge * judge          (defaults 0.65 / 0.35)

When the judge is *missing* (every judge in the chain failed), the reward is never silently
biased: `on_judge_missing="renormalize"` uses the tests alone (total = tests score), and
`"infra_error"` flags the rollout so training masks it. A sandbox/verifier infrastructure
failure always flags `infra_error`. NaN never leaves this module.

`reward_function(...)` wraps the same logic in TRL's reward-function shape
`f(completions, **kwargs) -> list[float]`, reading the per-rollout breakdowns that the
rollout code passes in `kwargs["reward_breakdowns"]` (TRL forwards extra dataset/rollout
columns as keyword arguments). Masked rollouts (a None breakdown, or one flagged
`infra_error`) come back as `None`; TRL gives a row that every function left None a zero
advantage and keeps it out of the group baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

OnJudgeMissing = Literal["renormalize", "infra_error"]


class RewardConfig(BaseModel):
    """How tests and judge combine. Weights must be non-negative with a positive sum."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    w_tests: float = Field(default=0.65, ge=0)
    """Weight of the weighted unit-test score."""
    w_judge: float = Field(default=0.35, ge=0)
    """Weight of the judge's process score (0 disables the judge)."""
    judge: str = "rule"
    """Judge spec (`tbrl_lib.rewards.judges.make_judge`): `rule` (offline), `anthropic:MODEL`,
    a comma-separated fallback chain, `config:PATH` (hot-reloaded), or `none` (tests only:
    `w_judge` then defaults to 0)."""
    on_judge_missing: OnJudgeMissing = "renormalize"
    """When every judge fails: `renormalize` (tests only) or `infra_error` (mask the rollout)."""

    @model_validator(mode="before")
    @classmethod
    def _no_judge_no_weight(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("judge") == "none" and "w_judge" not in data:
            return {**data, "w_judge": 0.0}
        return data

    @model_validator(mode="after")
    def _positive(self) -> RewardConfig:
        if self.w_tests + self.w_judge <= 0:
            raise ValueError("w_tests + w_judge must be > 0; e.g. w_tests=0.65, w_judge=0.35")
        if self.judge == "none" and self.w_judge > 0:
            raise ValueError(
                "judge='none' with w_judge > 0: set w_judge=0 for a tests-only reward, or "
                "name a judge (e.g. judge=rule)"
            )
        return self

    @property
    def judged(self) -> bool:
        """Whether a judge is called at all."""
        return self.w_judge > 0 and self.judge != "none"


@dataclass
class RewardBreakdown:
    """One rollout's reward, never a bare float."""

    tests: float
    judge: float | None
    """None when the judge is missing (see `judge_missing_reason`) or disabled."""
    total: float
    w_tests: float
    w_judge: float
    infra_error: bool = False
    judge_missing_reason: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def metrics(self) -> dict[str, float]:
        """`reward/...` metrics for the run store."""
        out = {
            "reward/total": self.total,
            "reward/tests": self.tests,
            "reward/infra_error": float(self.infra_error),
            "reward/judge_missing": float(self.judge is None and self.w_judge > 0),
        }
        if self.judge is not None:
            out["reward/judge"] = self.judge
        return out


def _clean(value: float | None, what: str) -> float | None:
    if value is None:
        return None
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{what} is {value}; scores must be finite numbers in [0, 1]")
    return max(0.0, min(1.0, value))


def combine(
    tests: float,
    judge: float | None,
    config: RewardConfig | None = None,
    *,
    judge_missing_reason: str | None = None,
    infra_error: bool = False,
) -> RewardBreakdown:
    """The reward of one rollout from its test score and judge score (None = missing)."""
    config = config or RewardConfig()
    tests_score = _clean(tests, "tests score")
    judge_score = _clean(judge, "judge score")
    notes: list[str] = []
    if config.w_judge == 0:
        total = tests_score
        judge_score = None if judge is None else judge_score
    elif judge_score is None:
        reason = judge_missing_reason or "judge missing"
        if config.on_judge_missing == "infra_error":
            infra_error = True
            notes.append(f"judge missing ({reason}); rollout flagged infra_error")
        else:
            notes.append(f"judge missing ({reason}); reward renormalised to tests only")
        total = tests_score
    else:
        total = (config.w_tests * tests_score + config.w_judge * judge_score) / (
            config.w_tests + config.w_judge
        )
    return RewardBreakdown(
        tests=tests_score,
        judge=judge_score,
        total=total,
        w_tests=config.w_tests,
        w_judge=config.w_judge,
        infra_error=infra_error,
        judge_missing_reason=judge_missing_reason if judge_score is None else None,
        notes=notes,
    )


def reward_function(key: str = "total") -> Callable[..., list[float | None]]:
    """A TRL reward function reading `kwargs["reward_breakdowns"]` (one per completion).

    `key` picks `total`, `tests` or `judge`, so the parts can be logged as separate reward
    functions with their own weights in `GRPOConfig.reward_weights`.
    """

    def tbrl_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        breakdowns = kwargs.get("reward_breakdowns")
        if breakdowns is None or len(breakdowns) != len(completions):
            raise ValueError(
                "tbrl reward: pass one RewardBreakdown per completion as `reward_breakdowns` "
                f"(got {None if breakdowns is None else len(breakdowns)} for "
                f"{len(completions)} completions)"
            )
        out: list[float | None] = []
        for item in breakdowns:
            if item is None:  # a masked (infra error) rollout: no reward from any function
                out.append(None)
                continue
            item = item if isinstance(item, RewardBreakdown) else RewardBreakdown(**item)
            out.append(None if item.infra_error else getattr(item, key))
        return out

    tbrl_reward.__name__ = f"tbrl_{key}"
    return tbrl_reward
