"""The policy side of the Harbor agent, importable without Harbor (so tested on the host).

- `policy_spec(name, base_url)`: a tbrl policy spec from what Harbor passes as `-m` (or
  `--ak policy=`). tbrl specs go through unchanged; Harbor's `openai/MODEL` (an
  OpenAI-compatible server such as `vllm serve`, at `base_url`) and `anthropic/MODEL` are
  translated. Anything else is refused with the list of forms.
- `RecordingPolicy`: wraps a policy and keeps each reply's token ids, so the agent can fill
  Harbor's `rollout_details` per turn: the full prompt ids (history included) and the
  completion ids, exactly as the policy produced them, never re-tokenised.
"""

from __future__ import annotations

from typing import Any

from tbrl_lib.models.policy_spec import SPEC_HELP
from tbrl_lib.policies.base import Conversation, Generation, Policy

TBRL_KINDS = ("oracle", "noop", "hf:", "vllm:", "openai:", "anthropic:")


def policy_spec(name: str | None, base_url: str | None = None) -> str:
    """The tbrl policy spec for Harbor's `-m NAME` (see the module docstring)."""
    if not name:
        raise ValueError(
            "the tbrl agent needs a policy: -m SPEC or --ak policy=SPEC "
            f"({SPEC_HELP}; or Harbor's openai/MODEL, anthropic/MODEL)"
        )
    if name in ("oracle", "noop") or name.startswith(TBRL_KINDS[2:]):
        return name
    provider, _, model = name.partition("/")
    if provider == "anthropic" and model:
        return f"anthropic:{model}"
    if provider in ("openai", "hosted_vllm") and model:
        if not base_url:
            raise ValueError(
                f"-m {name}: give the server's address with --ak api_base=http://HOST:8000/v1 "
                "(or set OPENAI_BASE_URL)"
            )
        return f"openai:{base_url}+{model}"
    raise ValueError(
        f"-m {name!r} is not a policy the tbrl agent knows; {SPEC_HELP}, "
        "or openai/MODEL with --ak api_base=URL, or anthropic/MODEL"
    )


class RecordingPolicy:
    """`inner`, unchanged, plus a record of every reply's ids (see the module docstring)."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name
        self.stops_at_deadline = getattr(inner, "stops_at_deadline", False)
        self.generations: list[Generation] = []

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        gen = await self.inner.generate(conversation, max_new_tokens)
        self.generations.append(gen)
        return gen

    def rollout_details(self) -> list[dict[str, Any]]:
        """Harbor's `RolloutDetail` list (one linear history), or [] when no reply had ids."""
        prompts, completions, logprobs = [], [], []
        so_far: list[int] = []
        for gen in self.generations:
            if gen.completion_ids is None:
                return []  # a reply without ids: the history cannot be given exactly
            so_far = so_far + list(gen.env_ids or [])
            prompts.append(list(so_far))
            completions.append(list(gen.completion_ids))
            logprobs.append(list(gen.logprobs) if gen.logprobs is not None else [])
            so_far = so_far + list(gen.completion_ids)
        if not completions:
            return []
        detail: dict[str, Any] = {
            "prompt_token_ids": prompts,
            "completion_token_ids": completions,
        }
        if all(len(lp) == len(c) for lp, c in zip(logprobs, completions)):
            detail["logprobs"] = logprobs
        return [detail]
