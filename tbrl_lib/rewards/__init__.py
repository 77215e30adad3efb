"""Rewards: the tamper-resistant verifier, judges, and their combination into one reward.

- `await verify(task, sandbox, timeout=None) -> TestReport` (see `verifier.py` for the attack table)
- `await score_rollout(task, sandbox, messages, judge, config)` -> (breakdown, tests, judge result)
- `combine(tests, judge, RewardConfig(...)) -> RewardBreakdown`; `reward_function()` for TRL
- `judges`: `make_judge(spec)`, `JudgeChain`, `ConfiguredJudge`, `RuleBasedJudge`, ...

Metrics: `reward/total`, `reward/tests`, `reward/judge`, `reward/judge_missing`,
`reward/infra_error` (`RewardBreakdown.metrics()`); `judge/score`, `judge/latency_s`,
`judge/cost_usd`, `judge/cached`, `judge/fallbacks`, `judge/missing` per rollout
(`judges.metrics_of`), and run/step totals `judge/cost_usd_run`, `judge/cost_usd_step`,
`judge/*_tokens_run`, `judge/calls` (`CostLedger.metrics()`).
"""

from tbrl_lib.rewards.reward import RewardBreakdown, RewardConfig, combine, reward_function
from tbrl_lib.rewards.scoring import score_rollout
from tbrl_lib.rewards.verifier import TestReport, verify

__all__ = [
    "RewardBreakdown",
    "RewardConfig",
    "TestReport",
    "combine",
    "reward_function",
    "score_rollout",
    "verify",
]
