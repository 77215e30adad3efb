"""One call that turns a finished rollout into its reward: the evidence, the parts, the total.

    breakdown, tests, judged = await score_rollout(task, sandbox, trajectory, judge, config)

Gathers the evidence (`parts.Evidence`): runs the verifier and the judge concurrently (the
judge needs no container; it is called only when `config.judged`), then scores every part of
`config.weights` from it (`parts.PARTS`) and combines them (`reward.combine`). The verifier's
`infra_error` flags the breakdown (training masks it); a judge that is missing is handled as
`config.on_judge_missing` says. A rollout whose sandbox was removed at a limit (storage:
`sandbox.base.REMOVED_AT_LIMIT`) gives no evidence: nothing is run, every part scores 0.
`judge_for(config)` builds the judge a reward asks for, the one place training, evaluation
and `tbrl agent run` get theirs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.rewards.judges import Judge, JudgeInput, JudgeMissing, JudgeResult, make_judge
from tbrl_lib.rewards.judges.specs import require_available
from tbrl_lib.rewards.parts import PARTS, Evidence
from tbrl_lib.rewards.reward import RewardBreakdown, RewardConfig, combine
from tbrl_lib.rewards.verifier import TestReport, verify
from tbrl_lib.sandbox.base import REMOVED_AT_LIMIT
from tbrl_lib.tasks.model import Task


async def score_rollout(
    task: Task,
    sandbox: Any,
    trajectory: Trajectory,
    judge: Any | None,
    config: RewardConfig | None = None,
    test_timeout: float | None = None,
) -> tuple[RewardBreakdown, TestReport, JudgeResult | JudgeMissing | None]:
    config = config or RewardConfig()
    if trajectory.error_kind in REMOVED_AT_LIMIT:
        return _removed_at_limit(task, trajectory, config)
    judged: JudgeResult | JudgeMissing | None = None
    if config.judged and judge is None:
        judged = JudgeMissing(reason="no judge configured")
    if config.judged and judge is not None:
        item = JudgeInput.from_messages(
            [m for m in trajectory.messages if m.get("role") != "system"],
            environment=task.environment.dockerfile or "",
            instruction=task.instruction,
            task_id=task.id,
        )
        judge_call = judge.score(item)
    else:
        judge_call = asyncio.sleep(0, judged)
    tests, judged = await asyncio.gather(verify(task, sandbox, timeout=test_timeout), judge_call)
    evidence = Evidence(task=task, trajectory=trajectory, tests=tests, judged=judged)
    scores = {name: PARTS[name].score(evidence) for name in config.weights}
    breakdown = combine(scores, config, infra_error=tests.infra_error)
    if tests.infra_error:
        breakdown.notes.append(f"verifier: {tests.error}")
    return breakdown, tests, judged


def judge_for(reward: RewardConfig) -> Judge | None:
    """The judge `reward` asks for, refused now if it cannot run here (no API key, no CLI);
    None when the reward is tests only. Training and evaluation both build theirs here."""
    if not reward.judged:
        return None
    judge = make_judge(reward.judge)
    require_available(judge)
    return judge


def _removed_at_limit(
    task: Task, trajectory: Trajectory, config: RewardConfig
) -> tuple[RewardBreakdown, TestReport, None]:
    """Every part 0: the agent's limit removed the sandbox, so its tests cannot run."""
    why = f"not run: the sandbox was removed at its {trajectory.error_kind} limit"
    tests = TestReport(
        score=0.0,
        mode="pytest" if task.tests.pytest else "script",
        error=f"{why} ({trajectory.termination_message})",
    )
    breakdown = combine(dict.fromkeys(config.weights, 0.0), config)
    breakdown.notes.append(f"{why}; every part scores 0")
    return breakdown, tests, None
