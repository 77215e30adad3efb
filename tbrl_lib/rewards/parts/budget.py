"""The `budget` part: a penalty for running past a share of the episode's turn or token limit.

    used  = max(turns / max_turns, tokens / max_total_tokens)     (the episode's own limits)
    score = 1                                     when used <= BUDGET_SHARE
          = (1 - used) / (1 - BUDGET_SHARE)       above it, down to 0 at the limit

so an episode within the budget loses nothing and one that ends at a limit scores 0, the
shape of DAPO's overlong reward shaping (a soft penalty over the last stretch before the hard
length limit), here over turns as well as tokens. Its weight is 0 unless a run sets one
(`rollout.reward.weights.budget=0.1`). Missing when the trajectory records no limits (an
episode the rollout had to stop past its time limit).
"""

from __future__ import annotations

from tbrl_lib.rewards.parts.base import Evidence, Missing, Part

BUDGET_SHARE = 0.8
"""Share of each limit the episode may use before the penalty starts."""


def score(evidence: Evidence) -> float | Missing:
    trajectory = evidence.trajectory
    limits = trajectory.limits
    if not limits.get("max_turns") or not limits.get("max_total_tokens"):
        return Missing("the trajectory records no turn or token limit")
    used = max(
        len(trajectory.turns) / limits["max_turns"],
        trajectory.total_tokens / limits["max_total_tokens"],
    )
    if used <= BUDGET_SHARE:
        return 1.0
    return max(0.0, (1.0 - used) / (1.0 - BUDGET_SHARE))


PART = Part(score, can_be_missing=True)
