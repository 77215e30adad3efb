"""Reward parts: each a named score of a rollout, combined by weight into its reward.

`PARTS` is the one registry: a run's `rollout.reward.weights` may name any part in it, and
the metrics (`reward/<name>`), the console line, `metrics.jsonl`, `reward.png`, the run
report and TRL's logged reward functions all iterate over the parts a run weighs. To add
one: a module here with a `score(evidence)` and its `PART`, and one line below
(docs/architecture.md, "How to add").

| name | module | score |
|---|---|---|
| `tests` | `tests.py` | the verifier's weighted unit-test score |
| `judge` | `judge.py` | the judge's process score (missing when every judge failed) |
| `budget` | `budget.py` | 1 within 80% of the turn and token limits, falling to 0 at them |
"""

from __future__ import annotations

from tbrl_lib.rewards.parts import budget, judge, tests
from tbrl_lib.rewards.parts.base import Evidence, Missing, Part

PARTS: dict[str, Part] = {
    "tests": tests.PART,
    "judge": judge.PART,
    "budget": budget.PART,
}

__all__ = ["PARTS", "Evidence", "Missing", "Part"]
