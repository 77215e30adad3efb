"""Policies behind HTTP APIs, through the vendors' own SDKs (their retries and timeouts):

- `OpenAIPolicy`: any OpenAI-compatible Chat Completions endpoint (vLLM, OpenRouter, ...).
  With `return_token_ids=True` (vLLM) the server's prompt and completion ids are kept when
  the server's prompt extends the conversation's ids exactly; otherwise ids are dropped
  for the rollout and `extra["token_ids"]` says why (no silent drift).
- `AnthropicPolicy`: the Messages API (the installed SDK takes no `temperature`; the model's
  default sampling is used) with prompt caching (system prompt and the latest
  user turn carry `cache_control`), so a long episode pays for its prefix once.

Both reach their SDK through `tbrl_lib.llm_api.Transport` (a client per event loop) and read
its usage into the one `llm_api.Usage`. SDK failures after retries become `PolicyError`;
"prompt too long" becomes `ContextOverflow`. Left out: streaming, tool-calling APIs (the
action language is text).
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai

from tbrl_lib.llm_api import Transport, anthropic_usage, context_overflow, openai_usage
from tbrl_lib.policies.base import ContextOverflow, Conversation, Generation, PolicyError


def _api_failure(exc: Exception, backend: str) -> PolicyError:
    text = str(exc)
    if context_overflow(exc):
        return ContextOverflow(
            f"{backend}: the conversation no longer fits the model: {text[:300]}"
        )
    if isinstance(exc, ValueError):  # the SDKs raise json.JSONDecodeError for a non-JSON body
        return PolicyError(f"{backend}: the server sent a body that is not JSON ({exc})")
    return PolicyError(f"{backend}: {type(exc).__name__}: {text[:500]}")


class OpenAIPolicy:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 1.0,
        return_token_ids: bool = False,
        max_retries: int = 4,
        timeout: float = 600.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.temperature = temperature
        self.return_token_ids = return_token_ids
        self.extra_body = dict(extra_body or {})
        self.transport = Transport(
            "openai", base_url=base_url, api_key=api_key, timeout_s=timeout, max_retries=max_retries
        )

    def unavailable(self) -> str | None:
        """Why this policy cannot be called here; an endpoint of our own needs no key."""
        return self.transport.unavailable(f"policy {self.name}")

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        extra = {**self.extra_body, **({"return_token_ids": True} if self.return_token_ids else {})}
        try:
            resp = await self.transport.client().chat.completions.create(
                model=self.model,
                messages=conversation.messages,
                max_tokens=max_new_tokens,
                temperature=self.temperature,
                extra_body=extra or None,
            )
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise _api_failure(exc, self.name) from exc
        if not resp.choices:
            raise PolicyError(f"{self.name}: the response has no choices")
        choice = resp.choices[0]
        usage = openai_usage(resp.usage)
        gen = Generation(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.output_tokens,
            extra={"id": resp.id, "cache_read_tokens": usage.cache_read_tokens},
        )
        if self.return_token_ids:
            self._attach_ids(gen, resp.model_dump(), conversation.token_ids)
        return gen

    def _attach_ids(self, gen: Generation, data: dict[str, Any], so_far: list[int]) -> None:
        prompt_ids = data.get("prompt_token_ids")
        completion_ids = (data.get("choices") or [{}])[0].get("token_ids")
        if prompt_ids is None or completion_ids is None:
            gen.extra["token_ids"] = (
                "the server returned no token ids (is it vLLM with return_token_ids?)"
            )
        elif prompt_ids[: len(so_far)] != so_far:
            gen.extra["token_ids"] = (
                "the server re-rendered the prompt differently from the ids generated so "
                "far (chat template drift); ids dropped for this rollout"
            )
        else:
            gen.env_ids, gen.completion_ids = prompt_ids[len(so_far) :], completion_ids
            content = ((data["choices"][0].get("logprobs") or {}).get("content")) or []
            if len(content) == len(completion_ids):  # vLLM with logprobs=True: one entry per token
                gen.logprobs = [entry["logprob"] for entry in content]


class AnthropicPolicy:
    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout: float = 600.0,
    ) -> None:
        self.name = f"anthropic:{model}"
        self.model = model
        self.transport = Transport(
            "anthropic",
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout,
            max_retries=max_retries,
        )

    def unavailable(self) -> str | None:
        """Why this policy cannot be called here (no API key)."""
        return self.transport.unavailable(f"policy {self.name}")

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        system = [m["content"] for m in conversation.messages if m["role"] == "system"]
        messages = [
            {"role": m["role"], "content": [{"type": "text", "text": m["content"] or "(empty)"}]}
            for m in conversation.messages
            if m["role"] != "system"
        ]
        if messages and messages[-1]["role"] == "user":
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        kwargs: dict[str, Any] = {}
        if system:
            kwargs["system"] = [
                {
                    "type": "text",
                    "text": "\n\n".join(system),
                    "cache_control": {"type": "ephemeral"},
                }
            ]
        try:
            resp = await self.transport.client().messages.create(
                model=self.model, max_tokens=max_new_tokens, messages=messages, **kwargs
            )
        except (anthropic.AnthropicError, ValueError) as exc:  # ValueError: not JSON
            raise _api_failure(exc, self.name) from exc
        text = "".join(block.text for block in resp.content if getattr(block, "type", "") == "text")
        usage = anthropic_usage(resp.usage)
        return Generation(
            text=text,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.output_tokens,
            finish_reason="length" if resp.stop_reason == "max_tokens" else "stop",
            extra={
                "id": resp.id,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
            },
        )
