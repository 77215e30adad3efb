"""Who writes the assistant turns. `make_policy(spec)` picks one from a short string:

- `oracle`, `noop` (no model; see `scripted.py`)
- `hf:MODEL` (a local Hugging Face model: a folder, a packaged name such as `smollm2-135m`,
  `tiny`, a hub id; resolved by `tbrl_lib.models`; `hf.py`)
- `openai:BASE_URL+MODEL` (any OpenAI-compatible endpoint: vLLM, OpenRouter; `api.py`)
- `anthropic:MODEL` (the Anthropic Messages API; `api.py`)

Keyword arguments go to the policy's constructor (e.g. `return_token_ids=True`).
"""

from __future__ import annotations

from typing import Any

from tbrl_lib.policies.base import ContextOverflow, Conversation, Generation, Policy, PolicyError

SPEC_HELP = "policy specs: oracle, noop, hf:MODEL, openai:BASE_URL+MODEL, anthropic:MODEL"


def make_policy(spec: str, **kwargs: Any) -> Policy:
    kind, _, rest = spec.partition(":")
    if kind == "oracle" and not rest:
        from tbrl_lib.policies.scripted import OraclePolicy

        return OraclePolicy(**kwargs)
    if kind == "noop" and not rest:
        from tbrl_lib.policies.scripted import NoopPolicy

        return NoopPolicy()
    if kind == "hf" and rest:
        from tbrl_lib.policies.hf import HFPolicy

        return HFPolicy(rest, **kwargs)
    if kind == "openai" and "+" in rest:
        from tbrl_lib.policies.api import OpenAIPolicy

        base_url, model = rest.rsplit("+", 1)
        return OpenAIPolicy(base_url, model, **kwargs)
    if kind == "anthropic" and rest:
        from tbrl_lib.policies.api import AnthropicPolicy

        return AnthropicPolicy(rest, **kwargs)
    raise ValueError(
        f"unknown policy spec {spec!r}; {SPEC_HELP} "
        "(e.g. openai:http://localhost:8000/v1+Qwen/Qwen3-8B)"
    )


__all__ = [
    "SPEC_HELP",
    "ContextOverflow",
    "Conversation",
    "Generation",
    "Policy",
    "PolicyError",
    "make_policy",
]
