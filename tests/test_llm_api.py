"""The one LLM client layer: a client per event loop, one `Usage` for both vendors' usage
objects, and what an SDK error means. The wire format itself is exercised against the
loopback server by the policy, judge and synthesis tests (`tests/policies/test_api.py`,
`tests/rewards/test_judges.py`, `tests/synth/test_llm.py`)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from tbrl_lib.fake_llm_server.llm_server import LLMServer
from tbrl_lib.llm_api import (
    Transport,
    Usage,
    anthropic_usage,
    context_overflow,
    openai_usage,
    retryable,
)


def test_both_vendors_usage_reads_into_one_vocabulary():
    # Anthropic leaves the cached part out of input_tokens; OpenAI counts it in prompt_tokens
    anthropic = anthropic_usage(
        SimpleNamespace(
            input_tokens=10,
            output_tokens=5,
            cache_read_input_tokens=1000,
            cache_creation_input_tokens=200,
        )
    )
    openai = openai_usage(
        SimpleNamespace(
            prompt_tokens=1210,
            completion_tokens=5,
            prompt_tokens_details=SimpleNamespace(cached_tokens=1000),
        )
    )
    assert (anthropic.prompt_tokens, openai.prompt_tokens) == (1210, 1210)
    assert anthropic.cache_read_tokens == openai.cache_read_tokens == 1000
    assert (openai.input_tokens, openai.cache_write_tokens) == (210, 0)
    assert openai_usage(None) == Usage()


def test_usage_adds_up_and_is_priced_from_the_one_table():
    total = Usage(1_000_000, 1_000_000, cache_read_tokens=1_000_000)
    total.add(Usage(0, 0, cache_write_tokens=1_000_000, cost_usd=0.5))
    assert total.prompt_tokens == 3_000_000 and total.cost_usd == 0.5
    # claude-haiku-4-5: $1 in, $5 out, cache read 0.1x, cache write 1.25x per million tokens
    assert total.priced("claude-haiku-4-5").cost_usd == pytest.approx(1 + 5 + 0.1 + 1.25)
    assert Usage(10, 10).priced("mystery-model").cost_usd == 0.0  # unpriced: counted as free


def test_a_client_is_made_per_event_loop_and_kept_within_one():
    transport = Transport("openai", base_url="http://127.0.0.1:9/v1")

    async def twice():
        return transport.client(), transport.client()

    first, again = asyncio.run(twice())
    (other, _) = asyncio.run(twice())
    assert first is again and other is not first  # a new loop gets its own connections


def test_a_missing_key_is_said_before_any_call(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert Transport("anthropic").unavailable("judge x") == (
        "judge x needs an API key: set ANTHROPIC_API_KEY"
    )
    assert "or pass --base-url" in Transport("openai").unavailable("judge y")
    assert Transport("openai", base_url="http://localhost:8000/v1").unavailable("p") is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert Transport("anthropic").unavailable("judge x") is None
    with pytest.raises(ValueError, match="vendor 'vertex' unknown"):
        Transport("vertex")  # type: ignore[arg-type]


def test_sdk_errors_say_whether_to_retry_and_whether_the_context_overflowed():
    def error(status, text=""):
        return type("APIError", (Exception,), {"status_code": status})(text)

    assert retryable(error(429)) and retryable(error(529)) and retryable(TimeoutError())
    assert not retryable(error(401)) and not retryable(error(400, "bad request"))
    assert context_overflow(error(400, "This model's maximum context length is 32768 tokens"))
    assert not context_overflow(error(500, "maximum context length")) and not context_overflow(
        error(400, "invalid model")
    )


def test_the_real_sdk_client_reaches_the_loopback_server():
    with LLMServer(["hello"]) as server:
        transport = Transport("openai", base_url=server.openai_base_url, api_key="k")

        async def ask():
            reply = await transport.client().chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=5
            )
            return reply.choices[0].message.content, openai_usage(reply.usage)

        text, usage = asyncio.run(ask())
    assert text == "hello" and usage.output_tokens > 0
