"""The LLM backends with the real SDK clients against the loopback server (real wire
format), plus pricing and the budget meter."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
from tbrl_lib.llm_api import Usage
from tbrl_lib.pricing import Price
from tbrl_lib.synth.llm import (
    Answer,
    AnthropicLLM,
    BudgetExceeded,
    CostMeter,
    OpenAICompatibleLLM,
    Tool,
    ask_metered,
    make_llm,
    price_for,
)

TOOL = Tool(
    "give_number",
    "a number",
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)


def test_anthropic_backend_forces_the_tool_and_reads_usage():
    with LLMServer([Reply(json={"n": 7})]) as server:
        llm = AnthropicLLM("claude-sonnet-4-6", base_url=server.base_url, api_key="test")
        answer = asyncio.run(llm.ask("system words", "give me a number", TOOL))
        body = server.requests[0].body
    assert answer.data == {"n": 7}
    assert body["tool_choice"] == {"type": "tool", "name": "give_number"}
    assert body["tools"][0]["input_schema"] == TOOL.schema
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}  # prompt caching on
    assert answer.usage.output_tokens > 0 and answer.usage.cache_write_tokens > 0
    u, price = answer.usage, price_for("claude-sonnet-4-6")  # $3 / $15 per Mtok, cache 0.1x / 1.25x
    by_hand = (
        u.input_tokens * 3.0
        + u.output_tokens * 15.0
        + u.cache_read_tokens * 0.3
        + u.cache_write_tokens * 3.75
    ) / 1e6
    assert price[:2] == (3.0, 15.0) and by_hand > 0 and answer.cost_usd == pytest.approx(by_hand)


def test_anthropic_backend_counts_cache_reads_on_the_second_call():
    with LLMServer([Reply(json={"n": 1}), Reply(json={"n": 2})]) as server:
        llm = AnthropicLLM("claude-sonnet-4-6", base_url=server.base_url, api_key="test")

        async def twice():  # one event loop: the async client's connections belong to it
            return (
                await llm.ask("the same long system prompt", "a", TOOL),
                await llm.ask("the same long system prompt", "b", TOOL),
            )

        first, second = asyncio.run(twice())
    assert first.usage.cache_read_tokens == 0 and second.usage.cache_read_tokens > 0
    assert second.cost_usd < first.cost_usd  # reads cost a tenth, writes 1.25x


def test_anthropic_backend_retries_a_rate_limit_then_answers():
    with LLMServer([Reply.rate_limited(0.1), Reply(json={"n": 3})]) as server:
        llm = AnthropicLLM(
            "claude-sonnet-4-6", base_url=server.base_url, api_key="test", max_retries=2
        )
        answer = asyncio.run(llm.ask("s", "u", TOOL))
    assert answer.data == {"n": 3} and len(server.requests) == 2


def test_a_text_reply_instead_of_the_tool_is_an_error_that_says_so():
    with LLMServer(["I would rather chat."]) as server:
        llm = AnthropicLLM("claude-sonnet-4-6", base_url=server.base_url, api_key="test")
        with pytest.raises(ValueError, match="did not call tool 'give_number'"):
            asyncio.run(llm.ask("s", "u", TOOL))


def test_openai_compatible_backend_uses_json_mode():
    with LLMServer([Reply(json={"n": 5})]) as server:
        llm = make_llm(f"openai:{server.openai_base_url}+gpt-4.1-mini", api_key="test")
        assert isinstance(llm, OpenAICompatibleLLM)
        answer = asyncio.run(llm.ask("s", "u", TOOL))
        body = server.requests[0].body
    assert answer.data == {"n": 5}
    assert body["response_format"] == {"type": "json_object"}
    assert '"required": ["n"]' in body["messages"][-1]["content"]  # the schema is in the prompt
    assert answer.cost_usd > 0


def test_openai_compatible_backend_rejects_json_that_is_not_an_object():
    with LLMServer([Reply(json=["a", "list"])]) as server:
        llm = OpenAICompatibleLLM("gpt-4.1", base_url=server.openai_base_url, api_key="t")
        with pytest.raises(ValueError, match="answered list for give_number"):
            asyncio.run(llm.ask("s", "u", TOOL))


def test_prices_longest_prefix_and_unknown_model():
    assert price_for("claude-sonnet-4-5-20250929")[:2] == (3.0, 15.0)
    assert Usage(1_000_000, 1_000_000).priced("claude-haiku-4-5").cost_usd == pytest.approx(6.0)
    with pytest.raises(ValueError, match="no price known for model 'mystery-1'"):
        AnthropicLLM("mystery-1", api_key="x")
    assert price_for("mystery-1", {"mystery": Price(1.0, 2.0)}) == (1.0, 2.0, 0.0, 0.0)


@pytest.mark.parametrize("spec", ["anthropic:", "openai:http://x/v1", "vertex:foo"])
def test_bad_llm_specs_say_what_to_use(spec):
    with pytest.raises(ValueError, match="use 'anthropic:MODEL' or 'openai:BASE_URL"):
        make_llm(spec)


class _Fixed:
    model = "loopback"

    def __init__(self, cost: float) -> None:
        self.cost, self.calls = cost, 0

    async def ask(self, system, user, tool):
        self.calls += 1
        return Answer({"n": 1}, Usage(10, 10, cost_usd=self.cost))


def test_budget_meter_stops_calls_once_spent():
    meter, llm = CostMeter(budget_usd=0.25), _Fixed(0.1)
    for _ in range(3):  # 0.0 -> 0.1 -> 0.2 -> 0.3: the third call still starts under budget
        asyncio.run(ask_metered(llm, meter, "builder", "s", "u", TOOL))
    with pytest.raises(BudgetExceeded, match=r"budget of \$0.25 spent"):
        asyncio.run(ask_metered(llm, meter, "builder", "s", "u", TOOL))
    assert llm.calls == 3
    report = meter.report()
    assert report["calls"] == 3 and report["by_role_usd"]["builder"] == pytest.approx(0.3)
    with pytest.raises(ValueError, match="budget_usd must be positive"):
        CostMeter(budget_usd=0)
