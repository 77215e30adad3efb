"""`make_policy(spec)`: a policy from a short string, the one place that knows them all.

- `oracle`, `noop` (no model; they write the action language: `agent/scripted.py`)
- `hf:MODEL` (a local Hugging Face model: a folder, a packaged name such as `smollm2-135m`,
  `tiny`, a hub id, resolved by `resolve.resolve_model`; `policies/hf.py`)
- `vllm:MODEL` (the same models sampled by an in-process vLLM engine; `policies/vllm_engine.py`)
- `openai:BASE_URL+MODEL` (any OpenAI-compatible endpoint: vLLM, OpenRouter; `policies/api.py`)
- `anthropic:MODEL` (the Anthropic Messages API; `policies/api.py`)

Keyword arguments go to the policy's constructor (e.g. `return_token_ids=True`). It lives
with the model resolver, above the agent: the scripted policies speak the agent's action
language and `hf:` names go through the resolver; the model-backed policies below know
nothing of actions or names.
"""

from __future__ import annotations

from typing import Any

from tbrl_lib.agent.scripted import NoopPolicy, OraclePolicy
from tbrl_lib.models.resolve import resolve_model
from tbrl_lib.policies.base import Policy
from tbrl_lib.policies.hf import HFPolicy
from tbrl_lib.policies.vllm_engine import VLLMPolicy

SPEC_HELP = (
    "policy specs: oracle, noop, hf:MODEL, vllm:MODEL, openai:BASE_URL+MODEL, anthropic:MODEL"
)


def make_policy(spec: str, **kwargs: Any) -> Policy:
    """The policy `spec` names (see the module docstring); an unknown spec lists them."""
    kind, _, rest = spec.partition(":")
    if kind == "oracle" and not rest:
        return OraclePolicy(**kwargs)
    if kind == "noop" and not rest:
        return NoopPolicy()
    if kind == "hf" and rest:
        return HFPolicy(resolve_model(rest), name=spec, **kwargs)
    if kind == "vllm" and rest:
        return VLLMPolicy(resolve_model(rest), name=spec, **kwargs)
    if kind in ("openai", "anthropic"):
        from tbrl_lib.policies import api  # the vendors' SDKs take seconds to import

        if kind == "openai" and "+" in rest:
            base_url, model = rest.rsplit("+", 1)
            return api.OpenAIPolicy(base_url, model, **kwargs)
        if kind == "anthropic" and rest:
            return api.AnthropicPolicy(rest, **kwargs)
    raise ValueError(
        f"unknown policy spec {spec!r}; {SPEC_HELP} "
        "(e.g. openai:http://localhost:8000/v1+Qwen/Qwen3-8B)"
    )
