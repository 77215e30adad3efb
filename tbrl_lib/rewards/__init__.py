"""Rewards: the tamper-resistant verifier, judges, the reward parts and their combination.

- `await verify(task, sandbox, timeout=None) -> TestReport` (see `verifier.py` for the attack table)
- `await score_rollout(task, sandbox, trajectory, judge, config)` -> (breakdown, tests, judge result)
- `parts.PARTS`: the reward parts by name (`tests`, `judge`, `budget`), each a score of a rollout
- `combine({part: score}, RewardConfig(weights=...)) -> RewardBreakdown`; `reward_function()` for TRL
- `judge_for(config)`: the judge a reward asks for, refused early when it cannot run here
- `judges`: `make_judge(spec)`, `JudgeChain`, `ConfiguredJudge`, `RuleBasedJudge`, ...

Metrics: `reward/total`, `reward/<part>` (`reward/tests`, `reward/judge`, ...),
`reward/judge_missing`, `reward/infra_error` (`RewardBreakdown.metrics()`); `judge/score`, `judge/latency_s`,
`judge/cost_usd`, `judge/cached`, `judge/fallbacks`, `judge/missing` per rollout
(`judges.metrics_of`), and run/step totals `judge/cost_usd_run`, `judge/cost_usd_step`,
`judge/*_tokens_run`, `judge/calls` (`CostLedger.metrics()`).
"""

from tbrl_lib.rewards.parts import PARTS
from tbrl_lib.rewards.reward import RewardBreakdown, RewardConfig, combine, reward_function
from tbrl_lib.rewards.scoring import judge_for, score_rollout
from tbrl_lib.rewards.verifier import TestReport, verify

__all__ = [
    "PARTS",
    "RewardBreakdown",
    "RewardConfig",
    "TestReport",
    "combine",
    "judge_for",
    "reward_function",
    "score_rollout",
    "verify",
]
