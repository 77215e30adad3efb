"""The `tests` part: the verifier's weighted unit-test score (`verifier.TestReport.score`)."""

from __future__ import annotations

from tbrl_lib.rewards.parts.base import Evidence, Missing, Part


def score(evidence: Evidence) -> float | Missing:
    return evidence.tests.score


PART = Part(score)
