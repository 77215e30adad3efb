"""The one token-exact renderer (`TokenChat`) under real chat formats, across 3 turns:
SmolLM2's ChatML with its default system prompt, Qwen3's template with thinking on and off,
and a Qwen3 `-Thinking` template that opens the block itself. The tokenizer is the tiny
model's (it has Qwen3's special tokens), given each family's template; the real SmolLM2
tokenizer runs the same checks in `tests/models/test_real_model.py`.

Each test checks that the trajectory is the plain concatenation of what the model saw turn
by turn, and then shows where a fresh render of the same messages differs from it (the
drift a re-tokenising trainer would train on)."""

from __future__ import annotations

import asyncio

import pytest
from transformers import AutoTokenizer

from tbrl_lib.agent.parser import parse_actions, split_thinking
from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.models.tiny_corpus import build_tiny_model
from tbrl_lib.policies.base import Conversation
from tbrl_lib.policies.chat import Sample, TokenChat, TokenPolicy
from tests.agent.conftest import toy_task
from tests.policies.chat_templates import QWEN3, QWEN3_THINKING, SMOLLM2

ACTIONS = [
    "<bash>\ncmd: ls /app\n</bash>",
    '<file>\naction: write\nfile_path: /app/answer.txt\ncontent: "42"\n</file>',
    "<finish>\nmessage: wrote 42\n</finish>",
]
THOUGHTS = ["First look around.", "Now write it.", "Done."]
OBSERVATIONS = [
    "<bash_output>\nnotes.txt\n</bash_output>",
    "<file_output>\nwrote 3 bytes\n</file_output>",
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("models"))


def tokenizer_with(tiny_dir, template: str):
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    tok.chat_template = template
    return tok


class Scripted:
    """A sampler that emits given replies as ids (plus the end-of-turn id) and records the
    prompts it was shown."""

    def __init__(self, chat: TokenChat, replies: list[list[int]]) -> None:
        self.chat, self.replies, self.prompts = chat, replies, []

    async def sample(self, prompt_ids: list[int], max_new_tokens: int, deadline=None) -> Sample:
        self.prompts.append(list(prompt_ids))
        end = self.chat.tokenizer.convert_tokens_to_ids("<|im_end|>")
        return Sample(self.replies[len(self.prompts) - 1] + [end], stopped=True)


def run_turns(chat: TokenChat, replies: list[list[int]], messages=None):
    """Three turns the way `run_episode` drives a token policy; returns (ids, messages,
    sampler)."""
    task = toy_task()
    sampler = Scripted(chat, replies)
    policy = TokenPolicy("scripted", chat, sampler, max_context=32_768)
    conv = Conversation(task=task, messages=list(messages or initial_messages(task)))
    for turn, _ in enumerate(replies):
        gen = asyncio.run(policy.generate(conv, 256))
        conv.token_ids = list(conv.token_ids) + gen.env_ids + gen.completion_ids
        conv.messages.append({"role": "assistant", "content": gen.text})
        if turn < len(OBSERVATIONS):
            conv.messages.append({"role": "user", "content": OBSERVATIONS[turn]})
        conv.turn += 1
    return conv.token_ids, conv.messages, sampler


def encode(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def fresh_render(tok, messages, thinking: bool) -> str:
    return tok.apply_chat_template(messages, tokenize=False, enable_thinking=thinking)


def assert_exact(ids, sampler, replies, tok):
    """Every turn continued from exactly the ids before it; the model's tokens are its own."""
    for prompt in sampler.prompts:
        assert ids[: len(prompt)] == prompt
    end = tok.convert_tokens_to_ids("<|im_end|>")
    for reply in replies:
        at = next(i for i in range(len(ids)) if ids[i : i + len(reply)] == reply)
        assert ids[at + len(reply)] == end


def test_smollm2_default_system_prompt_and_token_drift(tiny_dir):
    tok = tokenizer_with(tiny_dir, SMOLLM2)
    chat = TokenChat(tok)
    assert chat.reply_format == "plain"  # SmolLM2's template knows no thinking
    # The model samples `ls` letter by letter: ids a fresh tokenisation would never produce.
    odd = (
        encode(tok, "<bash>\ncmd: ")
        + [encode(tok, c)[0] for c in "ls"]
        + encode(tok, " /app\n</bash>")
    )
    replies = [odd] + [encode(tok, a) for a in ACTIONS[1:]]
    assert odd != encode(tok, ACTIONS[0])
    ids, messages, sampler = run_turns(chat, replies)
    assert_exact(ids, sampler, replies, tok)
    rendered = fresh_render(tok, messages, thinking=True)
    assert tok.decode(ids) + "\n" == rendered  # the text agrees ...
    assert encode(tok, rendered)[: len(ids)] != ids  # ... its fresh ids do not (`l`,`s` != `ls`)
    # Without a system message the template injects its own; the renderer renders the first
    # prompt through the same template, so the trajectory carries it too, once.
    user_only = [m for m in initial_messages(toy_task()) if m["role"] != "system"]
    ids, _, _ = run_turns(chat, [encode(tok, a) for a in ACTIONS], user_only)
    text = tok.decode(ids)
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert text.count("named SmolLM") == 1


@pytest.mark.parametrize("thinking", [True, False])
def test_qwen3_template_thinking_on_and_off(tiny_dir, thinking):
    tok = tokenizer_with(tiny_dir, QWEN3)
    chat = TokenChat(tok, enable_thinking=thinking)
    assert chat.reply_format == ("think" if thinking else "plain")
    texts = [
        f"<think>\n{t}\n</think>\n\n{a}" if thinking else a
        for t, a in zip(THOUGHTS, ACTIONS, strict=True)
    ]
    replies = [encode(tok, t) for t in texts]
    ids, messages, sampler = run_turns(chat, replies)
    assert_exact(ids, sampler, replies, tok)
    text = tok.decode(ids)
    empty = "<think>\n\n</think>\n\n"
    if thinking:  # every turn's reasoning stays in the ids, as generated
        assert all(f"<think>\n{t}\n</think>" in text for t in THOUGHTS)
    else:  # the template closed an empty block before each reply: the environment's ids
        assert text.count(empty) == 3
    assert [
        a.kind
        for m in messages
        if m["role"] == "assistant"
        for a in parse_actions(m["content"]).actions
    ] == ["bash", "file.write", "finish"]
    # Qwen3's template, rendering the conversation afresh, drops the earlier turns' reasoning
    # (thinking on) and their empty blocks (thinking off): that render is not what the model saw.
    rendered = fresh_render(tok, messages, thinking)
    assert rendered != text + "\n"
    earlier = [f"<think>\n{t}\n</think>\n\n" for t in THOUGHTS[:2]] if thinking else [empty] * 2
    expected = text
    for block in earlier:  # the last turn (after the last user message) keeps its block
        expected = expected.replace(block, "", 1)
    assert rendered == expected + "\n"


def test_qwen3_thinking_template_opens_the_block_in_the_prompt(tiny_dir):
    tok = tokenizer_with(tiny_dir, QWEN3_THINKING)
    chat = TokenChat(tok)
    assert chat.reply_format == "inside"
    texts = [f"{t}\n</think>\n\n{a}" for t, a in zip(THOUGHTS, ACTIONS, strict=True)]
    replies = [encode(tok, t) for t in texts]
    ids, messages, sampler = run_turns(chat, replies)
    assert_exact(ids, sampler, replies, tok)
    assert tok.decode(ids).count("<|im_start|>assistant\n<think>\n") == 3
    for message, thought, action in zip(
        [m for m in messages if m["role"] == "assistant"], THOUGHTS, ACTIONS, strict=True
    ):  # a bare `</think>` reply: the parser and the split see the template's open block
        assert split_thinking(message["content"])[0] == thought
        assert [a.tag for a in parse_actions(message["content"]).actions] == [
            action[1:].split(">")[0]
        ]
