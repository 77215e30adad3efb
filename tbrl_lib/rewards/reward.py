"""Combining a rollout's reward parts into one reward, keeping the breakdown.

The parts (`rewards/parts`, registry `PARTS`: `tests`, `judge`, `budget`, ...) each give a
score in [0, 1] or are missing; `RewardConfig.weights` weighs them (default 0.65 tests +
0.35 judge). With W the parts whose weight is above 0 and that have a score:

    total = sum(w_p * s_p for p in W) / sum(w_p for p in W)
    total = s_p                                      when W holds one part p

so the default is `0.65 * tests + 0.35 * judge` (the weights sum to 1), and a weighted part
that is *missing* (every judge in the chain failed) is never silently scored:
`on_judge_missing="renormalize"` leaves it out of both sums (the judge missing: total =
tests score), `"infra_error"` flags the rollout so training masks it. When no weighted part
has a score (say, a judge-only reward whose judge failed) the rollout is flagged too: there is
nothing to make its reward of. Parts of weight 0 are scored and reported but never enter the
total. A sandbox/verifier infrastructure failure always flags `infra_error`. NaN never leaves
this module.

`reward_function(...)` wraps the same logic in TRL's reward-function shape
`f(completions, **kwargs) -> list[float]`, reading the per-rollout breakdowns that the
rollout code passes in `kwargs["reward_breakdowns"]` (TRL forwards extra dataset/rollout
columns as keyword arguments). Masked rollouts (a None breakdown, or one flagged
`infra_error`) come back as `None`; TRL gives a row that every function left None a zero
advantage and keeps it out of the group baseline.

Metrics (`RewardBreakdown.metrics()` per rollout, `step_metrics` over a step's breakdowns):
`reward/total`, `reward/<part>` (rollouts that have a score), `reward/<part>_missing` /
`_missing_rate` (parts that can be missing: weighted, without a score), `reward/infra_error`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tbrl_lib.rewards.parts import PARTS, Missing

OnJudgeMissing = Literal["renormalize", "infra_error"]

DEFAULT_WEIGHTS = {"tests": 0.65, "judge": 0.35}
"""The mission's reward: 65% weighted tests + 35% judge."""
OLD_WEIGHT_KEYS = {"w_tests": "tests", "w_judge": "judge"}
"""Settings of the reward before its parts were data (still read)."""


class RewardConfig(BaseModel):
    """Which parts make the reward, by weight, and the judge. Weights are non-negative with a
    positive sum."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    """Weight of each reward part (`rewards/parts`: `tests`, `judge`, `budget`); the ones
    given are merged into the default `{tests: 0.65, judge: 0.35}` (`--set
    rollout.reward.weights.budget=0.1` adds one; `judge: 0` turns the judge off). A part
    listed with weight 0 is scored and reported, not trained on (the judge is not called).
    The older `w_tests` / `w_judge` keys are still read."""
    judge: str = "rule"
    """Judge spec (`tbrl_lib.rewards.judges.make_judge`): `rule` (offline), `anthropic:MODEL`,
    a comma-separated fallback chain, `config:PATH` (hot-reloaded), or `none` (tests only:
    the judge's weight then defaults to 0)."""
    on_judge_missing: OnJudgeMissing = "renormalize"
    """When a weighted part has no score (every judge failed): `renormalize` (the other parts
    only) or `infra_error` (mask the rollout)."""

    @model_validator(mode="before")
    @classmethod
    def _weights_of_parts(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        old = {OLD_WEIGHT_KEYS[k]: data.pop(k) for k in list(data) if k in OLD_WEIGHT_KEYS}
        given = data.get("weights")
        if old and given is not None:
            raise ValueError(
                "reward: give the weights as `weights` ({tests: 0.65, judge: 0.35}) or the "
                "older w_tests / w_judge, not both"
            )
        given = dict(old or given or {})
        if data.get("judge") == "none" and "judge" not in given:
            given["judge"] = 0.0
        data["weights"] = {**DEFAULT_WEIGHTS, **given}
        return data

    @model_validator(mode="after")
    def _positive(self) -> RewardConfig:
        unknown = [name for name in self.weights if name not in PARTS]
        if unknown:
            raise ValueError(
                f"reward.weights names {', '.join(map(repr, unknown))}, not a reward part; the "
                f"parts are {', '.join(PARTS)} (rewards/parts: PARTS)"
            )
        negative = [f"{name}={w}" for name, w in self.weights.items() if not w >= 0]
        if negative:
            raise ValueError(f"reward.weights must be >= 0, got {', '.join(negative)}")
        if sum(self.weights.values()) <= 0:
            raise ValueError("reward.weights must sum to > 0; e.g. {tests: 0.65, judge: 0.35}")
        if self.judge == "none" and self.weights["judge"] > 0:
            raise ValueError(
                "judge='none' with a judge weight > 0: set weights.judge=0 for a tests-only "
                "reward, or name a judge (e.g. judge=rule)"
            )
        return self

    @property
    def judged(self) -> bool:
        """Whether a judge is called at all: the one place this is decided."""
        return self.weights.get("judge", 0.0) > 0 and self.judge != "none"

    def describe(self) -> str:
        """`65% tests + 35% judge (rule)`: each weighted part's share of the total, for reports."""
        whole = sum(self.weights.values())
        parts = " + ".join(f"{w / whole:.0%} {name}" for name, w in self.weights.items() if w > 0)
        return parts + (f" ({self.judge})" if self.judged else "")


@dataclass
class RewardBreakdown:
    """One rollout's reward, never a bare float: every part's score and weight, the total."""

    total: float
    scores: dict[str, float | None]
    """Each part of the run's weights: its score in [0, 1], None when missing."""
    weights: dict[str, float]
    missing: dict[str, str] = field(default_factory=dict)
    """Part -> why it has no score."""
    infra_error: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardBreakdown:
        """A breakdown from `to_dict()`, or from a rollout saved before the parts were data
        (`tests`, `judge`, `w_tests`, `w_judge`, `judge_missing_reason`)."""
        if "scores" in data:
            return cls(**data)
        reason = data.get("judge_missing_reason")
        return cls(
            total=data["total"],
            scores={"tests": data["tests"], "judge": data["judge"]},
            weights={"tests": data["w_tests"], "judge": data["w_judge"]},
            missing={"judge": reason} if reason else {},
            infra_error=data.get("infra_error", False),
            notes=list(data.get("notes") or []),
        )

    def metrics(self) -> dict[str, float]:
        """`reward/...` metrics for the run store."""
        out = {"reward/total": self.total, "reward/infra_error": float(self.infra_error)}
        for name, score in self.scores.items():
            if score is not None:
                out[f"reward/{name}"] = score
            if _can_be_missing(name):
                out[f"reward/{name}_missing"] = float(self._missed(name))
        return out

    def flagged_by(self) -> tuple[str, str]:
        """(part, why) of a breakdown flagged `infra_error` for a weighted part without a
        score: the first such part, or ("reward", the notes) when none is missing."""
        for name, why in self.missing.items():
            if self._missed(name):
                return name, why
        return "reward", "; ".join(self.notes)

    def _missed(self, name: str) -> bool:
        """A weighted part without a score."""
        return self.scores.get(name) is None and self.weights.get(name, 0.0) > 0


def _can_be_missing(name: str) -> bool:
    part = PARTS.get(name)
    return part is not None and part.can_be_missing


def _clean(value: float, what: str) -> float:
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{what} is {value}; scores must be finite numbers in [0, 1]")
    return max(0.0, min(1.0, value))


def combine(
    scores: Mapping[str, float | Missing | None],
    config: RewardConfig | None = None,
    *,
    infra_error: bool = False,
) -> RewardBreakdown:
    """The reward of one rollout from its parts' scores (see the module docstring for the
    formula). `scores` holds every part of `config.weights`; None or `Missing` = no score."""
    config = config or RewardConfig()
    absent = [name for name in config.weights if name not in scores]
    if absent:
        raise ValueError(f"combine: no score for the reward parts {absent} (None = missing)")
    clean: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    for name in config.weights:
        value = scores[name]
        if value is None or isinstance(value, Missing):
            clean[name] = None
            missing[name] = value.reason if isinstance(value, Missing) else f"{name} missing"
        else:
            clean[name] = _clean(value, f"{name} score")
    notes: list[str] = []
    counted = [
        (w, clean[name]) for name, w in config.weights.items() if w > 0 and clean[name] is not None
    ]
    for name, reason in missing.items():
        if config.weights[name] <= 0:
            continue
        if config.on_judge_missing == "infra_error":
            infra_error = True
            notes.append(f"{name} missing ({reason}); rollout flagged infra_error")
        else:
            notes.append(f"{name} missing ({reason}); reward renormalised to the other parts")
    if not counted:
        infra_error = True
        notes.append("no weighted part has a score; rollout flagged infra_error")
        total = 0.0
    elif len(counted) == 1:
        total = counted[0][1]
    else:
        total = sum(w * s for w, s in counted) / sum(w for w, _ in counted)
    return RewardBreakdown(
        total=total,
        scores=clean,
        weights=dict(config.weights),
        missing={name: why for name, why in missing.items()},
        infra_error=infra_error,
        notes=notes,
    )


def step_metrics(breakdowns: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """`reward/total`, `reward/<part>` and `reward/<part>_missing_rate` over a step's scored
    rollouts (`RewardBreakdown.to_dict()`s); a part no rollout has a score for is left out
    (a 0.0 there would read as a failing model)."""
    items = [
        b if isinstance(b, RewardBreakdown) else RewardBreakdown.from_dict(b) for b in breakdowns
    ]
    if not items:
        return {}
    out = {"reward/total": _mean(b.total for b in items)}
    names = list(dict.fromkeys(name for b in items for name in b.scores))
    for name in names:
        scored = [b.scores[name] for b in items if b.scores.get(name) is not None]
        if scored:
            out[f"reward/{name}"] = _mean(scored)
        if _can_be_missing(name):
            out[f"reward/{name}_missing_rate"] = _mean(float(b._missed(name)) for b in items)
    return out


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return float(sum(values) / len(values)) if values else 0.0


def reward_function(key: str = "total") -> Callable[..., list[float | None]]:
    """A TRL reward function reading `kwargs["reward_breakdowns"]` (one per completion).

    `key` picks `total` or a part (`tests`, `judge`, ...), so the parts can be logged as
    separate reward functions beside the total (TRL's `reward_weights` then give them 0)."""

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
            item = item if isinstance(item, RewardBreakdown) else RewardBreakdown.from_dict(item)
            if item.infra_error:
                out.append(None)
            else:
                out.append(item.total if key == "total" else item.scores.get(key))
        return out

    tbrl_reward.__name__ = f"tbrl_{key}"
    return tbrl_reward
