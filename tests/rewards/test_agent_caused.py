"""Agent-caused is scored: whatever the agent does inside its running container ends the
rollout with a reward (its termination reason recorded), never `infra_error`.

Each case is a whole `run_rollout` of a scripted policy on the image task of
`test_reward_hacking_image` (the agent does the `agentpkg` half honestly first, so the
tests score 0.5 when the sandbox still works for the verifier, 0 when it does not). The
other side, a vanished container or a stopped engine being infrastructure, is pinned in
`tests/rollout/test_run_rollout.py` (container removed from outside) and
`tests/sandbox/test_hosts.py` (second daemon stopped mid-rollout).

Left out here: writing past the storage limit. The sandbox is then removed at once and the
rollout scores 0 as `storage_limit`, the agent's doing (`tests/sandbox/test_limits.py`); where
a driver's quota fills first, ENOSPC fails the agent's own writes and the verifier's
`put_archive` is blamed by cause like any refused operation (`exec_failed`, scored).
"""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.scripted import ScriptedPolicy
from tbrl_lib.rollout import RolloutConfig, run_rollout
from tbrl_lib.sandbox.config import SandboxConfig
from tests.rewards.test_reward_hacking_image import AGENTPKG, PYTEST_TASK

pytestmark = pytest.mark.docker


def bash(cmd: str, timeout: int | None = None) -> str:
    extra = f"\ntimeout_secs: {timeout}" if timeout else ""
    return f"<bash>\ncmd: |\n  {cmd}{extra}\n</bash>"


CASES = {
    "kill_everything": (
        [
            bash("bash -c 'kill -9 -1'"),
            bash("kill -9 -1; kill -9 $$"),
            bash("echo '{\"value\": 0}' > /app/answer.json"),
        ],
        {},
        0.5,
    ),
    "kill_everything_leaves_init_alone": (
        [bash("kill -9 1; kill -STOP 1; kill -TERM 1; bash -c 'kill -9 -1'")],
        {},
        0.5,
    ),
    "fork_bomb": ([bash("b() { b | b & }; b", timeout=20)], {"pids": 64}, None),
    "hung_command": (
        [bash("sleep 1000", timeout=3), bash("sleep 1000 & wait", timeout=3)],
        {},
        0.5,
    ),
    "bash_removed": ([bash("rm -f /usr/bin/bash; kill -9 $$"), bash("echo hi")], {}, 0.5),
}
"""name -> (replies after the honest half, task limits, expected tests score; None: any)."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_agent_caused_failures_are_scored(name):
    replies, limits, expected = CASES[name]
    task = PYTEST_TASK.model_copy(
        update={
            "id": f"agent-caused-{name.replace('_', '-')}",
            "limits": PYTEST_TASK.limits.model_copy(update={**limits, "agent_timeout_sec": 20}),
        }
    )
    policy = ScriptedPolicy([bash(AGENTPKG.strip()), *replies])
    config = RolloutConfig(
        episode=EpisodeLimits(max_turns=len(replies) + 1),
        sandbox=SandboxConfig(start_timeout_s=300),
        grace_s=20,
    )
    result = asyncio.run(run_rollout(task, policy, config))
    assert result.infra_error is None, f"{name}: {result.infra_kind}: {result.infra_error}"
    assert result.reward is not None and result.tests is not None and not result.tests.infra_error
    assert result.reward.scores["tests"] <= 0.5
    if expected is not None:
        assert result.reward.scores["tests"] == expected, result.tests
    assert result.termination, result
    if name == "bash_removed":  # no new shell can start: the agent broke its sandbox
        assert result.termination == "sandbox_broken", result.trajectory.termination_message


@pytest.mark.parametrize("how", ["removed", "killed"])
def test_a_container_gone_or_stopped_from_outside_before_the_tests_is_infra(docker_client, how):
    """The other side at the verifier: the engine answers, but the container was removed or
    stopped from outside (init ignores every signal from inside, so the agent cannot)."""
    from tbrl_lib.rewards.verifier import verify
    from tbrl_lib.sandbox import open_sandbox

    async def run():
        async with open_sandbox(PYTEST_TASK) as sb:
            await sb.run("kill -9 1; bash -c 'kill -9 -1'")  # the agent's best try changes nothing
            assert (await sb.run("echo alive")).output == "alive\n"
            container = docker_client.containers.get(sb.container_id)
            container.remove(force=True) if how == "removed" else container.kill()
            return await verify(PYTEST_TASK, sb)

    report = asyncio.run(run())
    assert report.infra_error and report.score == 0.0, report
