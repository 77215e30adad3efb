"""Advantage estimators: how a step's rewards become the advantages GRPO's loss weighs.

An estimator is a function `(rewards, grpo) -> advantages` over a `[groups, n]` tensor, one
row per task's group of `grpo.num_generations` rollouts, NaN where a rollout is masked (an
infra error); it returns the same shape (NaN allowed: the trainer turns it into 0, so a
masked rollout never moves the policy). `ESTIMATORS` is the one registry and
`grpo.advantage` picks from it by name; `SessionTrainer` calls the chosen one for the
synchronous and the asynchronous trainer alike (`trainer.py`, `_generate_and_score_completions`).

| name | advantage of rollout i in its group |
|---|---|
| `grpo` | `(r_i - mean(r)) / (std(r) + 1e-4)`: TRL's GRPO (`grpo.scale_rewards`: the std of the group, of the batch, or none, Dr. GRPO), computed as TRL computes it, so its numbers are TRL's bit for bit |
| `rloo` | `r_i - mean(r_j, j != i)`: REINFORCE leave-one-out, the baseline of each rollout the others' mean, unscaled (= n/(n-1) x (r_i - mean(r)) over the n scored rollouts); a group with one scored rollout has no baseline: advantage 0 |

Means and stds skip masked rollouts. This module imports no torch (tensor methods only), so
the preflight names the estimators before anything loads torch. Left out: estimators that
need more than the rewards (a learned value, per-token credit): they would need the batch,
not a `[groups, n]` tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

    from tbrl_lib.train.config.config import GRPOSettings

Estimator = Callable[["Tensor", "GRPOSettings"], "Tensor"]


def grpo(rewards: Tensor, settings: GRPOSettings) -> Tensor:
    """GRPO's group-normalised advantage, as TRL computes it (`scale_rewards`)."""
    centred = rewards - rewards.nanmean(dim=1, keepdim=True)
    if settings.scale_rewards == "none":
        return centred
    std = nanstd(rewards, None if settings.scale_rewards == "batch" else 1)
    return centred / (std + 1e-4)


def rloo(rewards: Tensor, settings: GRPOSettings) -> Tensor:
    """REINFORCE leave-one-out: each rollout's baseline is the mean of the others' rewards."""
    scored = ~rewards.isnan()
    count = scored.sum(dim=1, keepdim=True)
    others = (rewards.nansum(dim=1, keepdim=True) - rewards.nan_to_num(0.0)) / (count - 1)
    return (rewards - others).where(scored & (count > 1), float("nan"))


def nanstd(values: Tensor, dim: int | None) -> Tensor:
    """The sample standard deviation along `dim` (None: all) skipping NaN, dims kept; NaN
    where fewer than two values (TRL's `nanstd`, the same operations in the same order)."""
    mean = values.nanmean(dim=dim, keepdim=True)
    variance = ((values - mean) ** 2).nanmean(dim=dim, keepdim=True)
    count = (~values.isnan()).sum(dim=dim, keepdim=True)
    correction = (count / (count - 1)).where(count > 1, float("nan"))
    return (variance * correction).sqrt()


ESTIMATORS: dict[str, Estimator] = {
    "grpo": grpo,
    "rloo": rloo,
}


def estimator(name: str) -> Estimator:
    """The estimator `grpo.advantage` names, or an error listing them."""
    if name not in ESTIMATORS:
        raise ValueError(
            f"grpo.advantage={name!r} is not an advantage estimator; choose one of "
            f"{', '.join(ESTIMATORS)} (train/grpo/advantages.py: ESTIMATORS)"
        )
    return ESTIMATORS[name]


def advantages(rewards: Tensor, n: int, settings: GRPOSettings) -> Tensor:
    """`rewards` (one per rollout, groups of `n` in a row, NaN = masked) -> one advantage per
    rollout by `settings.advantage`'s estimator; a masked rollout's is 0."""
    grouped = estimator(settings.advantage)(rewards.view(-1, n), settings)
    return grouped.reshape(-1).nan_to_num(nan=0.0)
