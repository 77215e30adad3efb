"""Advantage estimators: how a step's rewards become the advantages the loss weighs.

An estimator is a function `(rewards, grpo) -> advantages` over a `[groups, n]` tensor, one
row per task's group of `grpo.num_generations` rollouts, NaN where a rollout is masked (an
infra error); it returns the same shape (NaN becomes 0: a masked rollout never moves the
policy). `ESTIMATORS` is the one registry; `grpo.advantage` picks from it by name, checked
when the settings are read (`GRPOSettings`), and `scaled` says whether `grpo.scale_rewards`
applies to it (an unscaled one refuses `group` or `batch`).

| name | advantage of rollout i in its group |
|---|---|
| `grpo` | `(r_i - mean(r)) / (std(r) + 1e-4)`, scaled as `grpo.scale_rewards` says (the group's std, the batch's, or none: Dr. GRPO), computed as TRL computes it: TRL's numbers bit for bit |
| `rloo` | `r_i - mean(r_j, j != i)`: REINFORCE leave-one-out, unscaled (= n/(n-1) x (r_i - mean(r)) over the n scored rollouts); a group with one scored rollout has no baseline: 0 |

Means and stds skip masked rollouts. The synchronous and the asynchronous trainer both call
`advantages` (`SessionTrainer._generate_and_score_completions`). The settings are read before
torch loads (a refusal takes seconds), so this module imports no torch: the estimators use
the tensors' own methods, and `grpo` takes TRL's `nanstd` when it first runs. Left out:
estimators that need more than the rewards (a learned value, per-token credit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

    from tbrl_lib.train.config.config import GRPOSettings


@dataclass(frozen=True)
class Estimator:
    fn: Callable[[Tensor, GRPOSettings], Tensor]
    scaled: bool
    """`grpo.scale_rewards` applies to it; an unscaled estimator refuses `group` or `batch`."""


def grpo(rewards: Tensor, settings: GRPOSettings) -> Tensor:
    """GRPO's group-normalised advantage, as TRL computes it (`scale_rewards`)."""
    from trl.trainer.utils import nanstd  # TRL (with torch) loads after the settings

    centred = rewards - rewards.nanmean(dim=1, keepdim=True)
    if settings.scale_rewards == "none":
        return centred
    if settings.scale_rewards == "batch":
        return centred / (nanstd(rewards) + 1e-4)
    return centred / (nanstd(rewards, dim=1, keepdim=True) + 1e-4)


def rloo(rewards: Tensor, settings: GRPOSettings) -> Tensor:
    """REINFORCE leave-one-out: each rollout's baseline is the mean of the others' rewards."""
    scored = ~rewards.isnan()
    count = scored.sum(dim=1, keepdim=True)
    others = (rewards.nansum(dim=1, keepdim=True) - rewards.nan_to_num(0.0)) / (count - 1)
    return (rewards - others).where(scored & (count > 1), float("nan"))


ESTIMATORS: dict[str, Estimator] = {
    "grpo": Estimator(grpo, scaled=True),
    "rloo": Estimator(rloo, scaled=False),
}


def unknown_estimator(name: str) -> str | None:
    """Why `grpo.advantage=name` is refused, or None when it names an estimator."""
    if name in ESTIMATORS:
        return None
    return (
        f"grpo.advantage={name!r} is not an advantage estimator; choose one of "
        f"{', '.join(ESTIMATORS)} (train/config/estimators.py: ESTIMATORS)"
    )


def advantages(rewards: Tensor, n: int, settings: GRPOSettings) -> Tensor:
    """`rewards` (one per rollout, groups of `n` in a row, NaN = masked) -> one advantage per
    rollout by `settings.advantage`'s estimator; a masked rollout's is 0."""
    grouped = ESTIMATORS[settings.advantage].fn(rewards.view(-1, n), settings)
    return grouped.reshape(-1).nan_to_num(nan=0.0)
