"""`RolloutResult`: one rollout as every consumer sees it (training, evaluation, validation).

It keeps the trajectory (messages, exact token ids, env mask), the test report, the judge's
verdict, the combined reward, and - when the rollout says nothing about the agent - the
infrastructure error or the task's own defect, with its reason. Training turns it into TRL's rollout outputs,
evaluation into a trial record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.rewards.judges import JudgeMissing, JudgeResult
from tbrl_lib.rewards.reward import RewardBreakdown
from tbrl_lib.rewards.verifier import TestReport


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
