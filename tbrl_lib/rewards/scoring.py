"""One call that turns a finished rollout into its reward: verifier + judge + combination.

    breakdown, tests, judged = await score_rollout(task, sandbox, trajectory.messages, judge, config)

Runs the verifier and the judge concurrently (the judge needs no container). The verifier's
`infra_error` flags the breakdown (training masks it); a judge that is missing is handled as
`config.on_judge_missing` says; with `judge=None` or `w_judge == 0` the judge is skipped.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tbrl_lib.rewards.judges import JudgeInput, JudgeMissing, JudgeResult
from tbrl_lib.rewards.reward import RewardBreakdown, RewardConfig, combine
from tbrl_lib.rewards.verifier import TestReport, verify
from tbrl_lib.tasks.model import Task


async def score_rollout(
    task: Task,
    sandbox: Any,
    messages: list[dict],
    judge: Any | None,
    config: RewardConfig | None = None,
    test_timeout: float | None = None,
) -> tuple[RewardBreakdown, TestReport, JudgeResult | JudgeMissing | None]:
    config = config or RewardConfig()
    item = JudgeInput.from_messages(
        [m for m in messages if m.get("role") != "system"],
        environment=task.environment.dockerfile or "",
        instruction=task.instruction,
        task_id=task.id,
    )
    judge_call = (
        judge.score(item) if judge is not None and config.w_judge > 0 else asyncio.sleep(0, None)
    )
    tests, judged = await asyncio.gather(verify(task, sandbox, timeout=test_timeout), judge_call)
    if judged is None and config.w_judge > 0:
        judged = JudgeMissing(reason="no judge configured")
    breakdown = combine(
        tests.score,
        None if judged is None else judged.score,
        config,
        judge_missing_reason=judged.reason if isinstance(judged, JudgeMissing) else None,
        infra_error=tests.infra_error,
    )
    if tests.infra_error:
        breakdown.notes.append(f"verifier: {tests.error}")
    return breakdown, tests, judged
