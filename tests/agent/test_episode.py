"""The episode loop: every termination reason, in a real container where tools run, and
the trajectory is complete whatever the ending."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.scripted import ScriptedPolicy
from tbrl_lib.agent.trajectory import Termination, Trajectory
from tbrl_lib.models.policy_spec import make_policy
from tbrl_lib.policies.base import ContextOverflow, Generation, PolicyError
from tests.agent.conftest import in_sandbox, toy_task

pytestmark = pytest.mark.docker
TODO = "<todo>\nview_all: true\n</todo>"


def episode(policy, limits=None, task=None) -> Trajectory:
    task = task or toy_task(solution="echo 42 > /app/answer.txt\n")
    return in_sandbox(lambda sb: run_episode(task, policy, sb, limits), task)


def test_oracle_finishes_and_its_work_is_on_disk(base_image):
    task = toy_task(solution="set -e\nprintf '42\\n' > answer.txt\n")

    async def go(sb):
        traj = await run_episode(task, make_policy("oracle"), sb)
        return traj, (await sb.read_file("/app/answer.txt")).decode()

    traj, answer = in_sandbox(go, task)
    assert traj.termination == Termination.finished and answer == "42\n"
    kinds = [call.kind for turn in traj.turns for call in turn.calls]
    assert kinds[:2] == ["todo", "search.ls"] and "bash" in kinds and kinds[-1] == "finish"
    assert all(call.ok for turn in traj.turns for call in turn.calls)
    assert all(item["done"] for item in traj.todos) and len(traj.todos) == 3
    assert traj.messages[0]["role"] == "system" and traj.messages[1]["content"] == task.instruction


def test_noop_ends_with_no_action(base_image):
    traj = episode(make_policy("noop"))
    assert traj.termination == Termination.no_action and len(traj.turns) == 1
    assert traj.messages[-1]["role"] == "assistant"


def test_parse_error_streak_and_a_good_turn_resets_it(base_image):
    bad = "<bash>\ncommand: ls\n</bash>"
    traj = episode(
        ScriptedPolicy([bad, bad, TODO, bad, bad, bad]), EpisodeLimits(max_parse_error_turns=3)
    )
    assert traj.termination == Termination.parse_error_streak and len(traj.turns) == 6
    assert (
        "<parse_error>" in traj.turns[0].observation
        and "'cmd' is missing" in traj.turns[0].observation
    )


def test_max_turns(base_image):
    traj = episode(
        ScriptedPolicy(lambda conv: "<bash>\ncmd: echo hi\n</bash>"), EpisodeLimits(max_turns=3)
    )
    assert traj.termination == Termination.max_turns and len(traj.turns) == 3
    assert traj.turns[-1].observation == "<bash_output>\nhi\n</bash_output>"


class _Counting:
    """Reports a growing context, as an API would in its usage."""

    name = "counting"

    async def generate(self, conversation, max_new_tokens):
        self.last_max = max_new_tokens
        return Generation(
            text=TODO, prompt_tokens=1000 * (conversation.turn + 1), completion_tokens=100
        )


def test_token_budget_counts_the_whole_conversation_and_caps_each_reply(base_image):
    policy = _Counting()
    traj = episode(policy, EpisodeLimits(max_total_tokens=3000, max_tokens_per_turn=4096))
    assert traj.termination == Termination.token_budget
    assert len(traj.turns) == 3 and traj.total_tokens == 3100
    assert policy.last_max == 3000 - 2100  # never asks for more than the budget left


class _Slow:
    name = "slow"

    async def generate(self, conversation, max_new_tokens):
        await asyncio.sleep(30)


def test_time_limit_interrupts_a_slow_policy(base_image):
    traj = episode(_Slow(), EpisodeLimits(time_limit_s=1.0))
    assert traj.termination == Termination.time_limit and traj.wall_seconds < 10


def test_time_limit_bounds_a_long_command(base_image):
    traj = episode(
        ScriptedPolicy(["<bash>\ncmd: sleep 20\ntimeout_secs: 60\n</bash>", TODO]),
        EpisodeLimits(time_limit_s=2.0),
    )
    assert traj.termination == Termination.time_limit and traj.wall_seconds < 10
    assert "timed out" in traj.turns[0].observation


class _Raising:
    name = "raising"

    def __init__(self, exc):
        self.exc = exc

    async def generate(self, conversation, max_new_tokens):
        raise self.exc


@pytest.mark.parametrize(
    "exc,reason",
    [
        (ContextOverflow("too long"), Termination.context_overflow),
        (PolicyError("API down"), Termination.infra_error),
    ],
)
def test_policy_failures(base_image, exc, reason):
    traj = episode(_Raising(exc))
    assert traj.termination == reason and str(exc) in traj.termination_message


def test_a_bug_raises_instead_of_becoming_an_infra_error(base_image):
    """A bug is never masked: an unexpected exception leaves the episode, it is not recorded
    as infra_error (which training would silently mask)."""
    with pytest.raises(ZeroDivisionError):
        episode(_Raising(ZeroDivisionError("planted bug")))


@pytest.mark.parametrize(
    "kind,reason",
    [("shell_broken", Termination.sandbox_broken), ("daemon_unreachable", Termination.infra_error)],
)
def test_sandbox_errors_are_blamed_by_cause(base_image, kind, reason):
    from tbrl_lib.sandbox.base import SandboxError

    traj = episode(_Raising(SandboxError("boom", kind=kind)))
    assert traj.termination == reason and traj.error_kind == kind


def test_container_death_is_an_infra_error_and_the_trajectory_survives(base_image, docker_client):
    def kill_then_act(conv):
        if conv.turn == 1:
            docker_client.containers.get(container_ids[0]).kill()
        return "<bash>\ncmd: echo still-here\n</bash>"

    container_ids: list[str] = []
    task = toy_task()

    async def go(sb):
        container_ids.append(sb.container_id)
        return await run_episode(task, ScriptedPolicy(kill_then_act), sb)

    traj = in_sandbox(go, task)
    assert traj.termination == Termination.infra_error and traj.error_kind
    assert len(traj.turns) == 2 and "still-here" in traj.turns[0].observation


def test_actions_after_finish_do_not_run_and_trajectory_round_trips(base_image, tmp_path):
    reply = "<finish>\nmessage: done\n</finish>\n<bash>\ncmd: touch /app/after\n</bash>"
    traj = episode(ScriptedPolicy([reply]))
    assert traj.termination == Termination.finished
    assert [c.output for c in traj.turns[0].calls][1] == "not run: after finish"
    path = Trajectory.save_jsonl([traj, traj], tmp_path / "t.jsonl")
    loaded = Trajectory.load_jsonl(path)
    assert loaded == [traj, traj]


def test_a_fork_bomb_ends_the_episode_as_a_resource_limit_not_an_infra_error(base_image):
    """The agent's own fork bomb is its doing: the rollout ends on a named limit and is
    scored (an infra_error would be masked in training and go unpunished)."""
    task = toy_task().model_copy(
        update={"limits": toy_task().limits.model_copy(update={"pids": 64})}
    )
    bomb = "<bash>\ncmd: 'bomb() { bomb | bomb & bomb; }; bomb'\ntimeout_secs: 8\n</bash>"
    traj = episode(
        ScriptedPolicy(
            lambda conv: (
                bomb if conv.turn == 0 else "<bash>\ncmd: sleep 0.2; ls /\ntimeout_secs: 8\n</bash>"
            )
        ),
        EpisodeLimits(max_turns=60),
        task,
    )
    assert traj.termination == Termination.resource_limit and traj.error_kind == "pids"


def test_a_reply_cut_by_the_time_limit_is_kept_as_the_last_turn(base_image):
    """A slow model still writing when the episode's time runs out: its sampler stops at the
    deadline, the reply so far is recorded (ids included) and not run, the episode ends as
    `time_limit` within the grace period, never with zero turns."""
    import time

    from transformers import AutoTokenizer

    from tbrl_lib.agent.episode import STOP_GRACE_S
    from tbrl_lib.models.tiny_corpus import build_tiny_model
    from tbrl_lib.policies.batching import BatchingGenerator
    from tbrl_lib.policies.chat import Sample, TokenChat, TokenPolicy

    tok = AutoTokenizer.from_pretrained(str(build_tiny_model()))
    word = tok.encode(" sleep", add_special_tokens=False)

    class SlowModel:  # one token every 20 ms, never an end-of-turn
        def generate(self, prompts, max_new_tokens, abandoned=None):
            ids = tok.encode("<bash>\ncmd:", add_special_tokens=False)
            while len(ids) < max_new_tokens and not abandoned():
                time.sleep(0.02)
                ids += word
            return [Sample(ids, stopped=False) for _ in prompts]

    policy = TokenPolicy("slow", TokenChat(tok), BatchingGenerator(SlowModel()), 32_768)
    started = time.monotonic()
    traj = episode(policy, EpisodeLimits(time_limit_s=2, max_tokens_per_turn=100_000))
    assert time.monotonic() - started < 2 + STOP_GRACE_S
    assert traj.termination == Termination.time_limit and "kept as the last turn" in (
        traj.termination_message
    )
    (turn,) = traj.turns
    assert turn.finish_reason == "time_limit" and turn.completion_tokens > 10 and not turn.calls
    assert turn.assistant.startswith("<bash>\ncmd: sleep sleep")
    assert traj.env_mask.count(1) == turn.completion_tokens  # its ids are in the trajectory
