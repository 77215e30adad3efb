"""Judges: the `Judge` seam, the rule-based judge, LLM backends and the fallback chain.

`make_judge(spec)` (`specs.py`) picks an implementation from a short spec string:

| spec | judge |
|---|---|
| `rule`, `rule-nocaps` | offline rule-based judge (with / without the hard caps) |
| `anthropic:MODEL` | Anthropic Messages API (native SDK, prompt caching) |
| `openai:MODEL` | any OpenAI-compatible endpoint (`base_url=` for vLLM / OpenRouter) |
| `claude-cli[:MODEL]` | the Claude Code CLI in print mode |
| `config:PATH` | a `ConfiguredJudge`: a chain from a YAML file, re-read when it changes |
| `A,B,C` | a `JudgeChain` trying A, then B, then C |
"""

from __future__ import annotations

from typing import Any

from tbrl_lib.rewards.judges.base import (
    Judge,
    JudgeError,
    JudgeFormatError,
    JudgeInput,
    JudgeResult,
    Usage,
)
from tbrl_lib.rewards.judges.chain import (
    CostLedger,
    JudgeCache,
    JudgeChain,
    JudgeMissing,
    metrics_of,
)
from tbrl_lib.rewards.judges.llm import LLMJudge
from tbrl_lib.rewards.judges.rule_based import RuleBasedJudge
from tbrl_lib.rewards.judges.specs import ConfiguredJudge, JudgeConfig, make_judge
from tbrl_lib.rewards.reward import RewardConfig


def judge_for(reward: RewardConfig) -> Judge | None:
    """The judge `reward` asks for, refused now if it cannot run here (no API key, no CLI);
    None when the reward is tests only. Training and evaluation both build theirs here."""
    if not reward.judged:
        return None
    judge = make_judge(reward.judge)
    require_available(judge)
    return judge


class JudgeUnavailable(ValueError):
    """A judge was asked for that cannot run here (no API key, no CLI); says how to fix it."""


def require_available(judges: Any) -> None:
    """Refuse, before any case is scored, a judge (or a list, chain or configured chain
    containing one) that cannot run here: `JudgeUnavailable` names each and the fix."""
    pending = list(judges) if isinstance(judges, (list, tuple)) else [judges]
    problems = []
    while pending:
        judge = pending.pop(0)
        if isinstance(judge, ConfiguredJudge):
            pending.append(judge.chain)
        elif isinstance(judge, JudgeChain):
            pending.extend(judge.judges)
        elif hasattr(judge, "unavailable") and (why := judge.unavailable()):
            problems.append(why)
    if problems:
        raise JudgeUnavailable("; ".join(problems))


__all__ = [
    "ConfiguredJudge",
    "CostLedger",
    "Judge",
    "JudgeCache",
    "JudgeChain",
    "JudgeConfig",
    "JudgeError",
    "JudgeFormatError",
    "JudgeInput",
    "JudgeMissing",
    "JudgeResult",
    "JudgeUnavailable",
    "LLMJudge",
    "RuleBasedJudge",
    "Usage",
    "judge_for",
    "make_judge",
    "metrics_of",
    "require_available",
]
