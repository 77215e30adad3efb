"""API policies through the real SDKs against the loopback server (real wire format)."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
from tbrl_lib.models.policy_spec import make_policy
from tbrl_lib.policies.api import AnthropicPolicy, OpenAIPolicy
from tbrl_lib.policies.base import ContextOverflow, Conversation, PolicyError
from tests.agent.conftest import toy_task


def conversation(turn=0, token_ids=None):
    task = toy_task()
    return Conversation(
        task=task, messages=initial_messages(task), token_ids=token_ids or [], turn=turn
    )


def test_openai_policy_sends_the_conversation_and_reads_usage():
    with LLMServer(["<bash>\ncmd: ls\n</bash>"]) as server:
        policy = make_policy(f"openai:{server.openai_base_url}+qwen-test", api_key="k")
        gen = asyncio.run(policy.generate(conversation(), 256))
    (req,) = server.requests
    assert req.body["model"] == "qwen-test" and req.body["max_tokens"] == 256
    assert [m["role"] for m in req.body["messages"]] == ["system", "user"]
    assert gen.text == "<bash>\ncmd: ls\n</bash>" and gen.completion_ids is None
    assert gen.prompt_tokens > 0 and gen.completion_tokens > 0 and gen.finish_reason == "stop"


def test_openai_policy_keeps_vllm_token_ids_only_without_drift():
    replies = [
        Reply(text="a", prompt_ids=[1, 2, 3, 4], completion_ids=[9]),
        Reply(text="b", prompt_ids=[7, 7, 7], completion_ids=[9]),
    ]
    with LLMServer(replies) as server:
        policy = OpenAIPolicy(server.openai_base_url, "m", api_key="k", return_token_ids=True)

        async def both():  # one event loop per client, as in a real run
            return [await policy.generate(conversation(token_ids=[1, 2]), 10) for _ in range(2)]

        first, drifted = asyncio.run(both())
    assert server.requests[0].body["return_token_ids"] is True
    assert first.env_ids == [3, 4] and first.completion_ids == [9]
    assert drifted.completion_ids is None and "drift" in drifted.extra["token_ids"]


def test_openai_policy_retries_then_reports_failures_as_policy_errors():
    with LLMServer([Reply.rate_limited(0.05), "ok"]) as server:
        gen = asyncio.run(
            OpenAIPolicy(server.openai_base_url, "m", api_key="k", max_retries=2).generate(
                conversation(), 5
            )
        )
    assert gen.text == "ok" and len(server.requests) == 2
    with LLMServer([Reply.server_error()] * 3) as server:
        with pytest.raises(PolicyError, match="InternalServerError"):
            asyncio.run(
                OpenAIPolicy(server.openai_base_url, "m", api_key="k", max_retries=1).generate(
                    conversation(), 5
                )
            )
    with LLMServer([Reply.garbage_body()]) as server:
        with pytest.raises(PolicyError, match="not JSON"):
            asyncio.run(
                OpenAIPolicy(server.openai_base_url, "m", api_key="k", max_retries=0).generate(
                    conversation(), 5
                )
            )
    with LLMServer([Reply.slow(5)], max_delay_s=5) as server:
        with pytest.raises(PolicyError, match="Timeout"):
            asyncio.run(
                OpenAIPolicy(
                    server.openai_base_url, "m", api_key="k", max_retries=0, timeout=0.3
                ).generate(conversation(), 5)
            )


def test_context_length_error_becomes_context_overflow():
    too_long = Reply(
        status=400,
        error_type="invalid_request_error",
        text="This model's maximum context length is 32768 tokens. However, you requested 40000 tokens",
    )
    with LLMServer([too_long]) as server:
        with pytest.raises(ContextOverflow):
            asyncio.run(
                OpenAIPolicy(server.openai_base_url, "m", api_key="k", max_retries=0).generate(
                    conversation(), 5
                )
            )
    with LLMServer(
        [
            Reply(
                status=400,
                error_type="invalid_request_error",
                text="prompt is too long: 250000 tokens",
            )
        ]
    ) as server:
        with pytest.raises(ContextOverflow):
            asyncio.run(
                AnthropicPolicy(
                    "claude-x", api_key="k", base_url=server.base_url, max_retries=0
                ).generate(conversation(), 5)
            )


def test_anthropic_policy_caches_the_system_prompt_and_latest_turn():
    with LLMServer(["<todo>\nview_all: true\n</todo>", "second"]) as server:
        policy = AnthropicPolicy("claude-test", api_key="k", base_url=server.base_url)
        conv = conversation()

        async def two_turns():
            first = await policy.generate(conv, 100)
            conv.messages += [
                {"role": "assistant", "content": first.text},
                {"role": "user", "content": "<todo_output>\nx\n</todo_output>"},
            ]
            return first, await policy.generate(conv, 100)

        first, second = asyncio.run(two_turns())
    body = server.requests[0].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first.extra["cache_write_tokens"] > 0 and second.extra["cache_read_tokens"] > 0
    assert second.prompt_tokens >= first.prompt_tokens and second.text == "second"


def test_anthropic_overloaded_is_retried_by_the_sdk():
    with LLMServer([Reply.overloaded(), "fine"]) as server:
        gen = asyncio.run(
            AnthropicPolicy("c", api_key="k", base_url=server.base_url, max_retries=2).generate(
                conversation(), 5
            )
        )
    assert gen.text == "fine" and len(server.requests) == 2


def test_make_policy_rejects_unknown_specs_with_the_list():
    with pytest.raises(ValueError, match="oracle, noop, hf:MODEL"):
        make_policy("gpt5")
