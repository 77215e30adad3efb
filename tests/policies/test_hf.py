"""The local HF policy on the tiny Qwen3 model: exact token bookkeeping across turns."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.agent.trajectory import Termination
from tbrl_lib.policies import make_policy
from tbrl_lib.policies.base import ContextOverflow, Conversation
from tbrl_lib.policies.chat import Sample
from tbrl_lib.policies.hf import HFPolicy
from tbrl_lib.policies.tiny_model import build_tiny_qwen3
from tests.agent.conftest import in_sandbox, toy_task

REPLIES = [
    "<think>\nFirst look around.\n</think>\n\n<bash>\ncmd: ls /app\n</bash>",
    '<think>\nNow write it.\n</think>\n<file>\naction: write\nfile_path: /app/answer.txt\ncontent: "42"\n</file>',
    "<finish>\nmessage: wrote 42\n</finish>",
]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return build_tiny_qwen3(tmp_path_factory.mktemp("models"))


class ScriptedTokens(HFPolicy):
    """The real tokenizer and template; the 'model' emits canonical ids of scripted replies."""

    def __init__(self, path, replies, **kw):
        super().__init__(path, **kw)
        self.replies, self.prompts = replies, []
        self.sampler = self

    async def sample(self, prompt, max_new_tokens, deadline=None):
        self.prompts.append(list(prompt))
        text = self.replies[len(self.prompts) - 1]
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return Sample(ids, [-1.0] * len(ids), stopped=True)


def test_tiny_model_is_cached_by_content(tiny_model, tmp_path_factory):
    assert build_tiny_qwen3(tiny_model.parent) == tiny_model
    assert (tiny_model / "config.json").exists() and "qwen3" in (
        tiny_model / "config.json"
    ).read_text()


@pytest.mark.docker
@pytest.mark.parametrize("thinking", [True, False])
def test_trajectory_ids_are_the_exact_concatenation(tiny_model, base_image, thinking):
    policy = ScriptedTokens(tiny_model, REPLIES, enable_thinking=thinking)
    task = toy_task()
    traj = in_sandbox(lambda sb: run_episode(task, policy, sb), task)
    tok = policy.tokenizer
    assert traj.termination == Termination.finished and len(traj.turns) == 3
    ids = traj.token_ids
    for prompt in policy.prompts:  # every turn continued from exactly the ids so far
        assert ids[: len(prompt)] == prompt
    assert (
        tok.encode(tok.decode(ids), add_special_tokens=False) == ids
    )  # decode -> encode is stable
    seen = traj.messages[:-1]  # the last observation was never shown to the model
    rendered = tok.apply_chat_template(seen, tokenize=False, enable_thinking=thinking)
    if not thinking:  # the generation prompt's empty think block precedes each reply
        rendered = rendered.replace(
            "<|im_start|>assistant\n", "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        )
    assert tok.decode(ids) + "\n" == rendered
    generated = [t for t, m in zip(traj.completion_ids, traj.env_mask) if m == 1]
    assert tok.decode(generated) == "<|im_end|>".join(REPLIES) + "<|im_end|>"
    assert len(traj.logprobs) == len(traj.completion_ids)


def test_random_tiny_model_generates_with_ids_and_logprobs(tiny_model):
    policy = make_policy(f"hf:{tiny_model}", seed=0)
    task = toy_task()
    conv = Conversation(task=task, messages=initial_messages(task))
    gen = asyncio.run(policy.generate(conv, 12))
    assert gen.env_ids == policy.tokenizer.encode(
        policy.tokenizer.apply_chat_template(
            conv.messages, add_generation_prompt=True, tokenize=False
        ),
        add_special_tokens=False,
    )
    assert 0 < len(gen.completion_ids) <= 12 and len(gen.logprobs) == len(gen.completion_ids)
    assert all(lp <= 0 for lp in gen.logprobs)
    assert gen.prompt_tokens == len(gen.env_ids)


def test_context_overflow_is_named(tiny_model):
    policy = HFPolicy(tiny_model)
    policy.max_context = 100
    task = toy_task()
    with pytest.raises(ContextOverflow, match="the context holds 100"):
        asyncio.run(policy.generate(Conversation(task=task, messages=initial_messages(task)), 8))


@pytest.mark.docker
def test_episode_with_the_random_model_ends_cleanly(tiny_model, base_image):
    task = toy_task()
    policy = make_policy(f"hf:{tiny_model}", seed=1)
    traj = in_sandbox(
        lambda sb: run_episode(
            task, policy, sb, EpisodeLimits(max_turns=2, max_tokens_per_turn=16)
        ),
        task,
    )
    assert traj.termination in {
        Termination.no_action,
        Termination.max_turns,
        Termination.parse_error_streak,
    }
    assert len(traj.prompt_ids) > 1000 and traj.env_mask.count(1) == sum(
        t.completion_tokens for t in traj.turns
    )


def test_a_reply_cut_by_the_token_limit_gets_the_end_of_turn_added(tiny_model):
    """Only a stop token ends a turn: a reply cut on `<` (a prefix of `<|im_end|>`) gets the
    whole marker, never the text `|im_end|>` (the bug of the old trainer-side copy)."""
    policy = HFPolicy(tiny_model)
    tok = policy.tokenizer
    task = toy_task()
    messages = initial_messages(task)
    cut = tok.encode(
        "<bash>\ncmd: ls <", add_special_tokens=False
    )  # no <|im_end|>: hit max_new_tokens
    conv = Conversation(
        task=task,
        messages=messages
        + [{"role": "assistant", "content": tok.decode(cut)}, {"role": "user", "content": "obs"}],
        token_ids=[1, 2] + cut,
    )
    assert (
        tok.decode(policy.chat.turn_ids(conv))
        == "<|im_end|>\n<|im_start|>user\nobs<|im_end|>\n<|im_start|>assistant\n"
    )
    conv.token_ids = [1, 2] + cut + [tok.eos_token_id]
    assert (
        tok.decode(policy.chat.turn_ids(conv))
        == "\n<|im_start|>user\nobs<|im_end|>\n<|im_start|>assistant\n"
    )


def test_an_abandoned_batch_stops_generating(tiny_model):
    policy = HFPolicy(tiny_model, seed=0)
    prompt = policy.tokenizer.encode("<|im_start|>user\nhi<|im_end|>\n", add_special_tokens=False)
    calls = []

    def abandoned():  # nobody waits after the second token
        calls.append(1)
        return len(calls) >= 2

    (sample,) = policy.backend.generate([prompt], 500, abandoned)
    assert 1 <= len(sample.ids) <= 2 and len(calls) <= 2  # not 500 tokens
