"""The `judge` part: the judge's process score of the trajectory (`rewards/judges`).

Missing when every judge in the chain failed (`JudgeMissing`, with its reason) or when no
judge was called; whether one is called is `RewardConfig.judged`, decided there alone.
"""

from __future__ import annotations

from tbrl_lib.rewards.parts.base import Evidence, Missing, Part


def score(evidence: Evidence) -> float | Missing:
    judged = evidence.judged
    if judged is None:
        return Missing("no judge was called")
    if judged.score is None:  # JudgeMissing
        return Missing(judged.reason)
    return judged.score


PART = Part(score, can_be_missing=True)
