"""`run_rollout`, the one rollout: the mission's reward from tests and judge, a judge that
fails everywhere (renormalised or masked, as configured), a vanished container as an infra
error, an agent-broken sandbox as scored, and a bug that raises."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.agent.scripted import OraclePolicy
from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
from tbrl_lib.policies.base import Generation
from tbrl_lib.rewards import RewardConfig
from tbrl_lib.rewards.judges import make_judge
from tbrl_lib.rollout import RolloutConfig, run_rollout
from tbrl_lib.sandbox.config import SandboxConfig
from tests.agent.conftest import toy_task

pytestmark = pytest.mark.docker

SOLVED = toy_task(solution="echo 42 > /app/answer.txt\n", task_id="rollout-toy")
CONFIG = RolloutConfig(sandbox=SandboxConfig(start_timeout_s=300))


def rollout(policy, config=CONFIG, judge=None, task=SOLVED):
    return asyncio.run(run_rollout(task, policy, config, judge))


def test_the_reward_is_65_tests_35_judge_with_its_parts_kept(base_image):
    result = rollout(OraclePolicy(), judge=make_judge("rule"))
    assert result.infra_error is None and result.termination == "finished" and result.resolved
    reward = result.reward
    tests, judge = reward.scores["tests"], reward.scores["judge"]
    assert tests == 1.0 and judge is not None
    assert reward.total == pytest.approx(0.65 * tests + 0.35 * judge)
    assert set(result.timings) >= {"sandbox_start", "episode", "scoring", "total"}
    assert result.sandbox["commands"] >= 1


@pytest.mark.parametrize(
    "policy,expected", [("renormalize", "tests only"), ("infra_error", "masked")]
)
def test_a_judge_that_always_fails_is_renormalised_or_masked(base_image, policy, expected):
    with LLMServer(default=Reply.overloaded()) as down:
        judge = make_judge(
            "anthropic:claude-sonnet-4", base_url=down.base_url, api_key="t", max_retries=0
        )
        from tbrl_lib.rewards.judges import JudgeChain

        config = CONFIG.model_copy(update={"reward": RewardConfig(on_judge_missing=policy)})
        result = rollout(OraclePolicy(), config, JudgeChain([judge]))
        assert down.requests, "the judge was never asked"
    if expected == "tests only":
        assert result.infra_error is None
        reward = result.reward
        assert reward.scores["judge"] is None and reward.total == reward.scores["tests"] == 1.0
        assert "529" in reward.missing["judge"] or "overloaded" in reward.missing["judge"]
    else:
        assert result.reward is None and result.infra_kind == "judge"
        assert result.tests.score == 1.0  # the tests ran; only the reward is withheld


class _Sabotage:
    """A policy that acts on the container from outside the agent's tools."""

    name = "sabotage"

    def __init__(self, act):
        self.act, self.sandbox = act, None

    async def generate(self, conversation, max_new_tokens):
        await self.act()
        return Generation(text="<bash>\ncmd: echo still here\n</bash>")


def test_a_container_removed_from_outside_is_an_infra_error(base_image, docker_client):
    async def remove():
        for c in docker_client.containers.list(filters={"label": "tbrl.task=rollout-toy"}):
            c.remove(force=True)

    result = rollout(_Sabotage(remove))
    assert result.reward is None and result.infra_error
    assert result.infra_kind in ("container_gone", "container_died", "shell_failed")


def test_a_bug_in_scoring_raises(base_image, monkeypatch):
    import tbrl_lib.rewards.scoring as scoring

    def planted(*args, **kwargs):
        raise ZeroDivisionError("planted bug in combine")

    monkeypatch.setattr(scoring, "combine", planted)
    with pytest.raises(ZeroDivisionError, match="planted"):
        rollout(OraclePolicy())
