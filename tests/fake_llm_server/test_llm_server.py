"""The loopback server, driven by the real anthropic and openai SDK clients."""

from __future__ import annotations

import asyncio
import time

import anthropic
import openai
import pytest

from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply


def _anthropic(server: LLMServer, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test-key", **kw)


def _openai(server: LLMServer, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="test-key", **kw)


def test_anthropic_text_reply_and_request_log():
    with LLMServer(["<bash>\ncmd: ls\n</bash>"]) as server:
        msg = _anthropic(server).messages.create(
            model="claude-test",
            max_tokens=100,
            system="be brief",
            messages=[{"role": "user", "content": "list files"}],
        )
    assert msg.content[0].text == "<bash>\ncmd: ls\n</bash>"
    assert msg.stop_reason == "end_turn" and msg.usage.output_tokens > 0
    (req,) = server.requests
    assert req.api == "anthropic" and req.body["system"] == "be brief"
    assert "test-key" in (req.headers.get("x-api-key", "") + req.headers.get("authorization", ""))
    assert "anthropic-version" in req.headers


def test_anthropic_prompt_cache_created_then_read():
    system = [
        {"type": "text", "text": "long rubric " * 200, "cache_control": {"type": "ephemeral"}}
    ]
    with LLMServer(["a", "b"]) as server:
        client = _anthropic(server)
        first = client.messages.create(
            model="m", max_tokens=10, system=system, messages=[{"role": "user", "content": "x"}]
        )
        second = client.messages.create(
            model="m", max_tokens=10, system=system, messages=[{"role": "user", "content": "y"}]
        )
    assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0


def test_anthropic_tool_use_for_structured_output():
    tool = {
        "name": "score",
        "description": "d",
        "input_schema": {"type": "object", "properties": {"score": {"type": "number"}}},
    }
    with LLMServer([Reply(json={"score": 0.75})]) as server:
        msg = _anthropic(server).messages.create(
            model="m",
            max_tokens=50,
            tools=[tool],
            tool_choice={"type": "tool", "name": "score"},
            messages=[{"role": "user", "content": "grade"}],
        )
    block = msg.content[0]
    assert block.type == "tool_use" and block.name == "score" and block.input == {"score": 0.75}
    assert msg.stop_reason == "tool_use"


@pytest.mark.parametrize(
    "fault,error",
    [
        (Reply.rate_limited(0.1), anthropic.RateLimitError),
        (Reply.overloaded(), anthropic.InternalServerError),
        (Reply.server_error(), anthropic.InternalServerError),
    ],
)
def test_anthropic_faults_raise_the_sdk_error_without_retries(fault, error):
    with LLMServer([fault]) as server, pytest.raises(error) as info:
        _anthropic(server, max_retries=0).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert info.value.status_code == fault.status
    if fault.status == 529:
        assert info.value.body["error"]["type"] == "overloaded_error"


def test_anthropic_sdk_retries_through_429_and_529_honouring_retry_after():
    with LLMServer([Reply.rate_limited(0.2), Reply.overloaded(), "ok"]) as server:
        start = time.monotonic()
        msg = _anthropic(server, max_retries=3).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
        elapsed = time.monotonic() - start
    assert msg.content[0].text == "ok"
    assert len(server.requests) == 3
    assert elapsed >= 0.2  # the SDK waited as retry-after asked


def test_openai_chat_completion_with_usage_and_json_format():
    with LLMServer(["hello", Reply(json={"score": 1})]) as server:
        client = _openai(server)
        plain = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        structured = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "grade"}],
            response_format={"type": "json_object"},
        )
    assert plain.choices[0].message.content == "hello"
    assert plain.usage.total_tokens == plain.usage.prompt_tokens + plain.usage.completion_tokens
    assert structured.choices[0].message.content == '{"score": 1}'
    assert server.requests[1].body["response_format"] == {"type": "json_object"}


def test_openai_returns_vllm_token_ids_when_asked():
    with LLMServer([Reply(text="ab", prompt_ids=[1, 2, 3], completion_ids=[7, 8])]) as server:
        resp = _openai(server).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            extra_body={"return_token_ids": True},
        )
    data = resp.model_dump()
    assert data["prompt_token_ids"] == [1, 2, 3]
    assert data["choices"][0]["token_ids"] == [7, 8]
    assert resp.usage.prompt_tokens == 3 and resp.usage.completion_tokens == 2


def test_openai_429_then_success_through_sdk_retries():
    with LLMServer([Reply.rate_limited(0.1), Reply.server_error(), "fine"]) as server:
        resp = _openai(server, max_retries=2).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert resp.choices[0].message.content == "fine" and len(server.requests) == 3


def test_slow_reply_trips_the_client_timeout_and_is_bounded():
    with LLMServer([Reply.slow(5.0, "late")], max_delay_s=5.0) as server:
        start = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            _openai(server, max_retries=0, timeout=0.3).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        assert time.monotonic() - start < 3.0
    # leaving the context stops the sleeping handler instead of hanging


def test_garbage_body_surfaces_as_a_decode_error_in_both_sdks():
    # Both SDKs raise json.JSONDecodeError (a ValueError) for a 200 with a non-JSON body;
    # policies must treat that as an infrastructure error, not as a reply.
    with LLMServer([Reply.garbage_body()]) as server:
        with pytest.raises(ValueError):
            _openai(server, max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
    with LLMServer([Reply.garbage_body()]) as server:
        with pytest.raises(ValueError):
            _anthropic(server, max_retries=0).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )


def test_callable_script_sees_each_request_and_exhausted_queue_is_an_error():
    def answer(request):
        return f"you said {request.body['messages'][-1]['content']}"

    with LLMServer(answer) as server:
        resp = _openai(server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "ping"}]
        )
    assert resp.choices[0].message.content == "you said ping"
    with LLMServer([]) as server:
        with pytest.raises(openai.InternalServerError, match="no reply left"):
            _openai(server, max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )


def test_async_clients_work_too():
    async def both(server):
        a = await anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k").messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
        o = await openai.AsyncOpenAI(
            base_url=server.openai_base_url, api_key="k"
        ).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        return a, o

    with LLMServer(["a", "b"]) as server:
        a, o = asyncio.run(both(server))
    assert a.content[0].text == "a" and o.choices[0].message.content == "b"
