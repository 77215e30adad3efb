"""Batched generation on the trainer's model, and the trainer's policy (`TrainerPolicy`, a
`TokenPolicy` over a `BatchingGenerator` once a trainer is bound): exact token ids, the end
of turn after a cut reply, no sampling before a trainer is there."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from tbrl_lib import process_memory
from tbrl_lib.policies.base import Conversation
from tbrl_lib.policies.batching import BatchingGenerator
from tbrl_lib.policies.chat import Sample, stop_token_ids
from tbrl_lib.policies.hf import HFBackend
from tbrl_lib.train.model.trainer_policy import TrainerPolicy
from tests.train.test_step_runner import make_task


def trainer_policy(model, tokenizer, max_context):
    """The session's policy, bound to a trainer whose live model is `model` (the HF path)."""
    policy = TrainerPolicy(tokenizer, "hf", 1.0, 1.0, max_context)
    policy.bind(SimpleNamespace(model=model))
    return policy


def test_the_trainer_policy_refuses_to_sample_before_a_trainer_is_bound(tiny_tokenizer):
    policy = TrainerPolicy(tiny_tokenizer, "hf", 1.0, 1.0, 512)
    conversation = Conversation(task=make_task("a"), messages=[{"role": "user", "content": "t8"}])
    with pytest.raises(RuntimeError, match="once a trainer is bound"):
        asyncio.run(policy.generate(conversation, 5))


PROMPTS = [[3, 5, 7], [3, 5, 8, 9, 10], [3, 6], [3, 5, 7, 7]]


def sample_all(generator: BatchingGenerator, prompts: list[list[int]], max_new: int) -> list:
    """Every prompt sampled at once through `generator`, which is closed after."""

    async def main():
        try:
            return await asyncio.gather(*(generator.sample(p, max_new) for p in prompts))
        finally:
            await generator.aclose()

    return asyncio.run(main())


def test_concurrent_requests_share_one_backend_call(tiny_model, tiny_tokenizer):
    backend = HFBackend(tiny_model, tiny_tokenizer, temperature=1.2)
    generator = BatchingGenerator(backend, window_s=0.05)
    results = sample_all(generator, PROMPTS, 6)
    assert generator.calls == 1 and generator.batched_requests == 4
    for r in results:
        assert 1 <= len(r.ids) <= 6 and len(r.logprobs) == len(r.ids)
        assert all(lp <= 0 for lp in r.logprobs)
        assert r.stopped == (r.ids[-1] in backend.eos_ids)
        assert all(
            t not in backend.eos_ids for t in r.ids[:-1]
        )  # cut right after the first stop token


def test_the_largest_batch_is_noted_for_the_memory_report(tiny_model, tiny_tokenizer):
    # what the planner re-plans an evaluation at: 4 episodes padded to the longest prompt (5)
    # plus the longest reply
    process_memory.reset()
    backend = HFBackend(tiny_model, tiny_tokenizer, temperature=1.2)
    results = sample_all(BatchingGenerator(backend, window_s=0.05), PROMPTS, 6)
    reply = max(len(r.ids) for r in results)
    noted = {"generation_episodes": 4, "generation_context": 5 + reply, "generation_new": reply}
    assert process_memory.reached() == noted
    sample_all(BatchingGenerator(backend), PROMPTS[:1], 2)  # a smaller batch changes nothing
    assert process_memory.reached() == noted


def test_a_token_budget_splits_the_batch_and_serves_every_request(tiny_model, tiny_tokenizer):
    # 4 prompts of 3-5 tokens + 6 new: two fit 2 x 11 <= 24 tokens, a third would not
    backend = HFBackend(tiny_model, tiny_tokenizer, temperature=1.2)
    sizes: list[int] = []
    generate = backend.generate
    backend.generate = lambda prompts, *rest: sizes.append(len(prompts)) or generate(prompts, *rest)
    generator = BatchingGenerator(backend, window_s=0.05, max_batch_tokens=24)
    results = sample_all(generator, PROMPTS, 6)
    assert sizes == [2, 2] and generator.batched_requests == 4
    assert all(1 <= len(r.ids) <= 6 for r in results)
    lone = BatchingGenerator(backend, max_batch_tokens=4)  # one request over the budget: alone
    result = asyncio.run(lone.sample([3, 5, 7], 6))
    assert sizes[-1] == 1 and 1 <= len(result.ids) <= 6


def test_a_backend_failure_reaches_every_waiting_episode():
    class Broken:
        def generate(self, prompts, max_new_tokens, abandoned=None):
            raise RuntimeError("CUDA error: device lost")

    generator = BatchingGenerator(Broken(), window_s=0.01)

    async def main():
        try:
            return await asyncio.gather(
                *(generator.sample([1], 4) for _ in range(3)), return_exceptions=True
            )
        finally:
            await generator.aclose()

    outcomes = asyncio.run(main())
    assert all(isinstance(o, RuntimeError) and "device lost" in str(o) for o in outcomes)


def test_stop_tokens_include_the_chat_end_token(tiny_tokenizer):
    assert stop_token_ids(tiny_tokenizer) == [tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")]


def test_trainer_policy_ids_equal_the_rendered_conversation(tiny_model, tiny_tokenizer):
    # Prompt, a generated reply, an observation: the concatenated ids must be exactly what
    # the chat template renders for the whole conversation (no re-tokenization drift).
    policy = trainer_policy(tiny_model, tiny_tokenizer, 512)
    messages = [{"role": "system", "content": "t7"}, {"role": "user", "content": "t8 t9"}]
    conversation = Conversation(task=make_task("a"), messages=list(messages))

    async def turn():
        try:
            return await policy.generate(conversation, 5)
        finally:
            await policy.sampler.aclose()

    first = asyncio.run(turn())
    assert first.env_ids == tiny_tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    reply = [
        12,
        13,
        tiny_tokenizer.eos_token_id,
    ]  # as if the model had written "t12 t13" and stopped
    conversation.token_ids = first.env_ids + reply
    conversation.messages += [
        {"role": "assistant", "content": "t12 t13"},
        {"role": "user", "content": "t20"},
    ]
    env = policy.chat.turn_ids(conversation)
    whole = tiny_tokenizer.apply_chat_template(
        conversation.messages, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    assert conversation.token_ids + env == whole


def test_context_overflow_is_raised_before_generating(tiny_model, tiny_tokenizer):
    from tbrl_lib.policies.base import ContextOverflow

    policy = trainer_policy(tiny_model, tiny_tokenizer, 4)
    conversation = Conversation(
        task=make_task("a"), messages=[{"role": "user", "content": "t8 t9 t10"}]
    )
    with pytest.raises(ContextOverflow, match="the context holds 4"):
        asyncio.run(policy.generate(conversation, 5))


def test_a_batch_nobody_waits_for_is_abandoned():
    """An episode whose time limit passes mid-generation stops waiting; the backend is told,
    so a dead episode's reply does not hold up the next batch (HFBackend stops between tokens)."""
    import time

    seen: list[bool] = []

    class Slow:
        def generate(self, prompts, max_new_tokens, abandoned=None):
            deadline = time.monotonic() + 5
            while not abandoned() and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(abandoned())
            return [Sample([1], stopped=False) for _ in prompts]

    generator = BatchingGenerator(Slow(), window_s=0.01)

    async def main():
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(generator.sample([1], 4), timeout=0.2)
        while not seen and time.monotonic() - started < 5:
            await asyncio.sleep(0.01)
        await generator.aclose()
        return time.monotonic() - started

    assert asyncio.run(main()) < 4 and seen == [True]


def test_the_runs_generation_batches_take_the_memory_budget(tmp_path, tiny_model, tiny_tokenizer):
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.heldout.evaluator import HeldoutEvaluator
    from tbrl_lib.train.plan.memory_plan import generation_token_budget

    policy = TrainerPolicy(tiny_tokenizer, "hf", 1.0, 1.0, 512, max_batch_tokens=99)
    policy.bind(SimpleNamespace(model=tiny_model))
    assert policy.sampler.max_batch_tokens == 99
    config = load_preset("cpu-smollm2-learn", {"heldout.instances": 1, "heldout.bundled": 0})
    evaluator = HeldoutEvaluator.for_run(config, config.rollout, tmp_path)
    assert evaluator.max_batch_tokens == generation_token_budget(config) >= 8 * 1024
