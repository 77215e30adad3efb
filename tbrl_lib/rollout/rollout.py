"""`run_rollout(task, policy, config, judge)`: the one way a rollout happens, and
`RolloutResult`, what it returns.

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

`RolloutResult` keeps the trajectory (messages, exact token ids, env mask), the test report,
the judge's verdict, the combined reward, and - when the rollout says nothing about the
agent - the infrastructure error or the task's own defect, with its reason. Training turns it
into TRL's rollout outputs, evaluation into a trial record.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.trajectory import Termination, Trajectory
from tbrl_lib.rewards.judges import JudgeMissing, JudgeResult
from tbrl_lib.rewards.reward import RewardBreakdown
from tbrl_lib.rewards.scoring import score_rollout
from tbrl_lib.rewards.verifier import TestReport, verify
from tbrl_lib.rollout.config import RolloutConfig
from tbrl_lib.sandbox import open_sandbox
from tbrl_lib.sandbox.base import REMOVED_AT_LIMIT, SandboxError
from tbrl_lib.tasks.model import Task


@dataclass
class RolloutResult:
    """One rollout of one task. `reward` is None exactly when `infra_error` or `task_error`
    is set."""

    task_id: str
    trajectory: Trajectory | None
    """None only when no sandbox could be opened (or the episode overran its limit)."""
    tests: TestReport | None = None
    retests: list[TestReport] = field(default_factory=list)
    """Further test runs on the same container (`RolloutConfig.verify_repeats` - 1)."""
    judge: JudgeResult | JudgeMissing | None = None
    reward: RewardBreakdown | None = None
    infra_error: str | None = None
    """Why the rollout could not be run or scored (engine, build, container, backend, verifier)."""
    infra_kind: str | None = None
    """The failing part's kind (`SandboxError.kind`, `policy`, `verifier`), for retry decisions."""
    task_error: str | None = None
    """Why the task itself could not run (its image does not build here): neither the agent's
    doing nor the infrastructure's; never scored, never retried."""
    termination: str = "unknown"
    """The episode's `Termination` value; `agent_timeout` when the rollout had to stop it."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds: `sandbox_start`, `episode`, `scoring`, `total`."""
    sandbox: dict[str, float] = field(default_factory=dict)
    """The sandbox's counters (`SandboxStats`)."""
    place: str = ""
    """Where the sandbox ran (`SandboxStats.place`: the Ray node's id; empty when local)."""

    @property
    def resolved(self) -> bool:
        """Terminal-Bench's notion: every test passed. Script-scored tasks (Harbor test.sh
        writing a reward) have no per-test outcomes: score 1.0. A verifier that ran out of
        time never resolves a rollout, whatever it recorded before."""
        report = self.tests
        if report is None or self.infra_error or self.task_error or report.timed_out:
            return False
        if report.outcomes:
            return all(report.outcomes.values()) and not report.missing
        return report.score >= 1.0 - 1e-9

    @property
    def total(self) -> float | None:
        return None if self.reward is None else self.reward.total

    def metrics(self) -> dict[str, float]:
        """Per-rollout numbers for run metrics (averaged by the caller)."""
        out = {f"timing/{k}": v for k, v in self.timings.items()}
        if self.reward is not None:
            out.update(self.reward.metrics())
        if isinstance(self.judge, JudgeResult):
            out["judge/cost_usd"] = self.judge.usage.cost_usd
            out["judge/latency_s"] = self.judge.latency_s
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: everything except the trajectory's token ids (kept by the caller's own
        record where it needs them)."""
        traj = self.trajectory
        return {
            "task_id": self.task_id,
            "termination": self.termination,
            "infra_error": self.infra_error,
            "infra_kind": self.infra_kind,
            "task_error": self.task_error,
            "reward": None if self.reward is None else self.reward.to_dict(),
            "tests": None if self.tests is None else self.tests.to_dict(),
            "judge": None if self.judge is None else _judge_dict(self.judge),
            "timings": self.timings,
            "sandbox": self.sandbox,
            "place": self.place,
            "messages": None if traj is None else traj.messages,
            "termination_message": None if traj is None else traj.termination_message,
        }


def _judge_dict(judged: JudgeResult | JudgeMissing) -> dict[str, Any]:
    if isinstance(judged, JudgeMissing):
        return {"missing": True, "reason": judged.reason}
    return {
        "score": judged.score,
        "judge": judged.judge,
        "cached": judged.cached,
        "fallbacks": list(judged.fallbacks),
        "cost_usd": judged.usage.cost_usd,
    }


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
