"""The Harbor agent's policy side, without Harbor: which tbrl policy a `-m` name means, and
the per-turn token ids it hands Harbor's `rollout_details`."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.harbor.policy import RecordingPolicy, policy_spec
from tbrl_lib.policies.base import Conversation, Generation


@pytest.mark.parametrize(
    ("name", "base_url", "spec"),
    [
        ("oracle", None, "oracle"),
        ("noop", None, "noop"),
        ("openai:http://h:8000/v1+Qwen/Qwen3-8B", None, "openai:http://h:8000/v1+Qwen/Qwen3-8B"),
        ("anthropic/claude-sonnet-4-5", None, "anthropic:claude-sonnet-4-5"),
        ("openai/Qwen/Qwen3-8B", "http://h:8000/v1", "openai:http://h:8000/v1+Qwen/Qwen3-8B"),
        ("hosted_vllm/ckpt", "http://h:8000/v1", "openai:http://h:8000/v1+ckpt"),
    ],
)
def test_harbor_model_names_become_tbrl_specs(name, base_url, spec):
    assert policy_spec(name, base_url) == spec


@pytest.mark.parametrize(
    ("name", "base_url", "says"),
    [
        (None, None, "needs a policy"),
        ("openai/Qwen3-8B", None, "api_base"),  # a served model without the server's address
        ("gpt-5", None, "not a policy the tbrl agent knows"),
    ],
)
def test_unusable_names_are_refused_with_the_fix(name, base_url, says):
    with pytest.raises(ValueError, match=says):
        policy_spec(name, base_url)


class Replies:
    """Replies with fixed ids, as an OpenAI-compatible server with return_token_ids gives."""

    name = "ids"

    def __init__(self, gens: list[Generation]) -> None:
        self.gens = list(gens)

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        return self.gens.pop(0)


def _record(gens: list[Generation]) -> RecordingPolicy:
    policy = RecordingPolicy(Replies(gens))
    for _ in range(len(gens)):
        asyncio.run(policy.generate(None, 10))  # type: ignore[arg-type]
    return policy


def test_rollout_details_give_each_turn_its_full_prompt_and_completion():
    policy = _record(
        [
            Generation("a", env_ids=[1, 2, 3], completion_ids=[4, 5], logprobs=[-0.1, -0.2]),
            Generation("b", env_ids=[6], completion_ids=[7], logprobs=[-0.3]),
        ]
    )
    assert policy.rollout_details() == [
        {
            "prompt_token_ids": [[1, 2, 3], [1, 2, 3, 4, 5, 6]],
            "completion_token_ids": [[4, 5], [7]],
            "logprobs": [[-0.1, -0.2], [-0.3]],
        }
    ]


def test_no_ids_or_a_turn_without_ids_gives_no_details_rather_than_a_wrong_history():
    assert _record([Generation("text only")]).rollout_details() == []
    gaps = [Generation("a", env_ids=[1], completion_ids=[2]), Generation("b")]
    assert _record(gaps).rollout_details() == []


def test_logprobs_are_left_out_when_a_turn_has_none():
    details = _record([Generation("a", env_ids=[1], completion_ids=[2])]).rollout_details()
    assert details == [{"prompt_token_ids": [[1]], "completion_token_ids": [[2]]}]
