"""The oracle acts out each bundled task's reference solution through the action language,
and the verifier then passes every test: the smoke test of the whole loop (sandbox, tools,
parser, episode, verifier) and of the dataset's solutions."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.scripted import OraclePolicy
from tbrl_lib.agent.trajectory import Termination
from tbrl_lib.models.policy_spec import make_policy
from tbrl_lib.policies.base import Conversation, PolicyError
from tests.agent.conftest import toy_task
from tests.conftest import REPO

TASKS_DIR = REPO / "data" / "tasks"


def test_oracle_refuses_a_task_without_solution():
    task = toy_task(solution=None)
    with pytest.raises(PolicyError, match="has no reference solution"):
        asyncio.run(OraclePolicy().generate(Conversation(task=task, messages=[]), 100))


@pytest.mark.slow
@pytest.mark.docker
def test_oracle_solves_every_bundled_task(base_image):
    from tbrl_lib.rewards.verifier import verify
    from tbrl_lib.sandbox import open_sandbox
    from tbrl_lib.tasks import load_tasks

    tasks = load_tasks(TASKS_DIR, progress=False).tasks
    assert tasks, f"no bundled tasks under {TASKS_DIR}"
    limit = asyncio.Semaphore(4)

    async def one(task):
        async with limit, open_sandbox(task) as sandbox:
            traj = await run_episode(task, make_policy("oracle"), sandbox)
            report = await verify(task, sandbox)
        return task.id, traj.termination, traj.termination_message, report.score

    async def all_tasks():
        return await asyncio.gather(*(one(task) for task in tasks))

    results = asyncio.run(all_tasks())
    failures = [r for r in results if r[1] != Termination.finished or r[3] != 1.0]
    assert not failures, f"{len(failures)}/{len(results)} oracle rollouts failed: {failures}"
