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
from tbrl_lib.rewards.judges.specs import (
    ConfiguredJudge,
    JudgeConfig,
    JudgeUnavailable,
    make_judge,
    require_available,
)

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
    "make_judge",
    "metrics_of",
    "require_available",
]
