"""`run_rollout(task, policy, config, judge)`: the one way a rollout happens.

Open a sandbox from the task's image, run the episode, then score it: the verifier runs the
tests in that container while the judge reads the trajectory, and the two combine into the
mission's reward (`RewardConfig`: 65% weighted tests + 35% judge by default). Training,
evaluation, validation, `tbrl agent run` and judge-case recording all call this.

Who is to blame is decided by cause (see `tbrl_lib.sandbox.base`):

- infrastructure (`infra_error` set, reward None): a `SandboxError` whose `infra` is true
  (engine unreachable, build failed, container vanished), a model backend that failed
  (`PolicyError`), a verifier that could not run or did not return, a judge chain that
  failed entirely when `on_judge_missing="infra_error"`;
- the task's defect (`task_error` set, reward None): a `SandboxError` whose `task_fault` is
  true (its Dockerfile does not build here, its prebuilt image is missing): reported, never
  scored, never retried;
- the agent's doing, scored: limits (time, pids, memory, storage: a sandbox removed at its
  storage limit scores 0, nothing left to verify), a shell it broke, anything its commands
  did inside a running container;
- anything else is a bug and raises: it is never turned into a score or a masked rollout.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import Any

from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.trajectory import Termination, Trajectory
from tbrl_lib.rewards.scoring import score_rollout
from tbrl_lib.rewards.verifier import verify
from tbrl_lib.rollout.config import RolloutConfig
from tbrl_lib.rollout.result import RolloutResult
from tbrl_lib.sandbox import open_sandbox
from tbrl_lib.sandbox.base import REMOVED_AT_LIMIT, SandboxError
from tbrl_lib.tasks.model import Task

AGENT_TIMEOUT = "agent_timeout"
"""`RolloutResult.termination` of an episode the rollout had to stop past its limit."""


async def run_rollout(
    task: Task, policy: Any, config: RolloutConfig | None = None, judge: Any | None = None
) -> RolloutResult:
    """One rollout of `task` by `policy`, scored; see the module docstring for infra errors."""
    config = config or RolloutConfig()
    limits, sandbox_config = config.for_task(task)
    started = time.monotonic()
    timings: dict[str, float] = {}
    result = RolloutResult(task_id=task.id, trajectory=None, timings=timings)
    try:
        async with open_sandbox(task, sandbox_config) as sandbox:
            timings["sandbox_start"] = time.monotonic() - started
            result.place = sandbox.stats.place
            t0 = time.monotonic()
            try:
                trajectory = await asyncio.wait_for(
                    run_episode(task, policy, sandbox, limits), limits.time_limit_s + config.grace_s
                )
                result.termination = (
                    trajectory.termination.value if trajectory.termination else "unknown"
                )
            except TimeoutError:  # a step ignored its own deadline; the tests still run
                trajectory = Trajectory(
                    task_id=task.id,
                    policy=getattr(policy, "name", "?"),
                    messages=[],
                    termination=Termination.time_limit,
                    termination_message="the rollout stopped the episode past its time limit",
                )
                result.termination = AGENT_TIMEOUT
            result.trajectory = trajectory
            timings["episode"] = time.monotonic() - t0
            if trajectory.termination == Termination.infra_error:
                result.infra_error = (
                    f"episode: {trajectory.error_kind}: {trajectory.termination_message}"
                )
                result.infra_kind = trajectory.error_kind
            else:
                await _score(result, task, sandbox, trajectory, config, judge)
            result.sandbox = _numbers(asdict(sandbox.stats))
    except SandboxError as err:
        if err.task_fault:
            result.task_error = str(err)
        elif err.infra:
            result.infra_error, result.infra_kind = f"sandbox: {err.kind}: {err}", err.kind
        else:
            raise
    timings["total"] = time.monotonic() - started
    if result.infra_error or result.task_error:
        result.reward = None
    return result


async def _score(
    result: RolloutResult,
    task: Task,
    sandbox: Any,
    trajectory: Trajectory,
    config: RolloutConfig,
    judge: Any | None,
) -> None:
    t0 = time.monotonic()
    test_limit = config.test_limit(task)
    bound = test_limit + config.grace_s
    try:
        breakdown, tests, judged = await asyncio.wait_for(
            score_rollout(task, sandbox, trajectory, judge, config.reward, test_limit),
            bound,
        )
        result.tests, result.judge = tests, judged
        for _ in range(config.verify_repeats - 1):
            if tests.infra_error or trajectory.error_kind in REMOVED_AT_LIMIT:
                break
            again = await asyncio.wait_for(verify(task, sandbox, timeout=test_limit), bound)
            result.retests.append(again)
            tests = again if again.infra_error else tests
    except TimeoutError:
        result.infra_error, result.infra_kind = (
            f"verifier: did not return within {bound:.0f}s",
            "verifier",
        )
        return
    finally:
        result.timings["scoring"] = time.monotonic() - t0
    if tests.infra_error:
        result.infra_error, result.infra_kind = f"verifier: {tests.error}", "verifier"
    elif breakdown.infra_error:  # a weighted part had no score (every judge failed)
        part, why = breakdown.flagged_by()
        result.infra_error, result.infra_kind = f"{part}: {why}", part
    else:
        result.reward = breakdown


def _numbers(stats: dict[str, Any]) -> dict[str, float]:
    flat = {k: v for k, v in stats.items() if isinstance(v, (int, float))}
    flat.update({f"extra/{k}": v for k, v in (stats.get("extra") or {}).items()})
    return {k: float(v) for k, v in flat.items()}
