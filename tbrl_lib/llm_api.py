"""One way to reach an LLM API: the vendors' SDK clients, one `Usage`, the errors read once.

Three callers share it, each with its own request and its own reading of the reply: the API
policies (`policies/api.py`: a chat turn), the LLM judges (`rewards/judges/llm.py`: a score)
and the synthesis pipeline (`synth/llm.py`: one JSON object). What they share is here:

- `Transport(vendor, ...)`: the SDK's async client (`anthropic.AsyncAnthropic` or
  `openai.AsyncOpenAI`) with the SDK's own retries and timeout, made anew for each event loop
  (an async client's connections belong to the loop it first ran on, and a notebook or
  `aio.run_sync` runs several); `unavailable()` says why it cannot be called here (no API
  key; an OpenAI-compatible endpoint given by `base_url`, a local vLLM, needs none).
- `Usage`: tokens of one call or many, in one vocabulary for both vendors: `input_tokens`
  (uncached prompt tokens), `output_tokens`, `cache_read_tokens`, `cache_write_tokens`,
  `cost_usd`; `anthropic_usage` and `openai_usage` read the SDKs' usage objects into it, and
  `priced` adds the dollars from `tbrl_lib.pricing`.
- `retryable(exc)`, `context_overflow(exc)`: what an SDK error means for the caller.

The SDKs are imported when a client is first made: they take seconds to import, and only
API callers need them. Left out: streaming, batches, tool-calling beyond a forced tool.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, fields
from typing import Any, Literal

from tbrl_lib import pricing

Vendor = Literal["anthropic", "openai"]
KEY_ENV: dict[str, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses a caller may retry elsewhere (overload, rate limit, server errors, timeouts)."""
OVERFLOW_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "prompt is too long",
    "too many tokens",
)


@dataclass
class Usage:
    """Tokens (and dollars) of one call, or of many `add`ed together."""

    input_tokens: int = 0
    """Prompt tokens not read from or written to the provider's cache."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Prompt tokens read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the cache (Anthropic bills them above input)."""
    cost_usd: float = 0.0

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def priced(self, model: str, prices: dict[str, pricing.Price] | None = None) -> Usage:
        """This usage with `cost_usd` from the price table; an unpriced model costs 0.0
        (callers that budget refuse it first: `pricing.price_for`)."""
        price = pricing.price_for(model, prices)
        if price is not None:
            self.cost_usd = pricing.cost_usd(
                price,
                self.input_tokens,
                self.output_tokens,
                self.cache_read_tokens,
                self.cache_write_tokens,
            )
        return self


def anthropic_usage(usage: Any) -> Usage:
    """The Messages API's `usage` (its `input_tokens` leave the cached part out)."""
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", 0) or 0,
        cache_write_tokens=getattr(usage, "cache_creation_input_tokens", 0) or 0,
    )


def openai_usage(usage: Any) -> Usage:
    """Chat Completions' `usage` (its `prompt_tokens` include the cached ones); None: zeros."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    return Usage(
        input_tokens=usage.prompt_tokens - cached,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached,
    )


class Transport:
    """An SDK client for one vendor and endpoint, made per event loop (see the module docstring)."""

    def __init__(
        self,
        vendor: Vendor,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 600.0,
        max_retries: int = 4,
    ) -> None:
        if vendor not in KEY_ENV:
            raise ValueError(f"LLM vendor {vendor!r} unknown; use anthropic or openai")
        self.vendor, self.base_url = vendor, base_url
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.api_key_env = api_key_env or KEY_ENV[vendor]
        self.api_key = api_key or os.environ.get(self.api_key_env) or None
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def unavailable(self, name: str) -> str | None:
        """Why `name` cannot be called here (an absent API key), else None."""
        if self.api_key or (self.vendor == "openai" and self.base_url):
            return None
        if self.vendor == "anthropic" and os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            return None  # the SDK reads the bearer token itself
        other = " or pass --base-url for a local endpoint" if self.vendor == "openai" else ""
        return f"{name} needs an API key: set {self.api_key_env}{other}"

    def client(self) -> Any:
        """The SDK's async client for the running event loop."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = self._make(), loop
        return self._client

    def _make(self) -> Any:
        options = {
            "base_url": self.base_url,
            "max_retries": self.max_retries,
            "timeout": self.timeout_s,
        }
        if self.vendor == "anthropic":
            import anthropic  # seconds to import: only when a client is made

            return anthropic.AsyncAnthropic(api_key=self.api_key, **options)
        import openai  # seconds to import: only when a client is made

        return openai.AsyncOpenAI(api_key=self.api_key or "EMPTY", **options)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (None: a transport failure, a timeout)."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retryable(exc: BaseException) -> bool:
    """A failure another try (or another backend) may not meet: overload, rate limit, 5xx,
    timeouts and connection errors (no status)."""
    status = status_of(exc)
    return status is None or status in RETRYABLE_STATUS


def context_overflow(exc: BaseException) -> bool:
    """The request was refused because the conversation no longer fits the model."""
    return status_of(exc) == 400 and any(hint in str(exc).lower() for hint in OVERFLOW_HINTS)
