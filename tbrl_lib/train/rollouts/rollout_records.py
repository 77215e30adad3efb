"""What training keeps of a rollout: the `Rollout` record, its small row, the step's metrics,
and the trajectory file.

`Rollout.from_result` turns `tbrl_lib.rollout.run_rollout`'s result into the record training
sees: exact ids and env mask, the reward (None when masked), the breakdown, termination and
timings. A rollout with no tokens to train on (the episode ended before its first reply, or
overran its limit) is masked like an infra error. `rollout_row` is the part that crosses
processes; `metrics_of_rows` makes the step's numbers from rows (all processes' rows, so
every process logs the same):

    rollout/…   count, infra_error_rate, turns, seconds, completion_tokens, assistant_tokens,
                termination/<reason> shares
    reward/…    total, tests, solved_rate (share whose tests all passed:
                `RolloutResult.resolved`, as `eval/solve_rate` counts), judge_missing_rate,
                judge (scored rollouts only;
                absent when none was scored: a 0.0 there would read as a failing model)
    judge/…     cost_usd of the step's rollouts
    sandbox/…   per-rollout container numbers (startup_seconds, commands, ...)

`save_rollouts` writes one JSON line per rollout (ids, mask, reward, messages, test outcomes).
Left out: the `sampling/…` numbers (`dynamic_sampling.py`) and TRL's own (under `train/`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tbrl_lib.rollout import AGENT_TIMEOUT, RolloutResult


@dataclass
class Rollout:
    """One episode as training sees it: token ids, mask, and its reward breakdown."""

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float] | None
    reward: float | None
    """The combined reward (`RewardBreakdown.total`); None for an infra error (masked)."""
    breakdown: dict[str, Any] | None = None
    """`RewardBreakdown.to_dict()`: tests, judge, weights, notes; None when masked."""
    solved: bool = False
    """Every test passed (`RolloutResult.resolved`: what `eval/solve_rate` counts); the
    curriculum's notion of solved, never a reward threshold."""
    infra_error: bool = False
    error: str | None = None
    termination: str = "unknown"
    turns: int = 0
    seconds: float = 0.0
    judge_cost_usd: float = 0.0
    sandbox: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    """Test outcomes, judge verdict, messages: what is worth keeping with the trajectory."""
    dropped: bool = False
    """Its group had no reward variance and was replaced by a refill group (not trained on)."""

    @classmethod
    def from_result(cls, result: RolloutResult) -> Rollout:
        """The training record of a rollout. No tokens (the episode ended before the first
        reply, or overran its limit and was stopped) leaves nothing to train on: masked."""
        traj = result.trajectory
        details = result.to_dict()
        judge_cost = float((details.get("judge") or {}).get("cost_usd") or 0.0)
        common = dict(
            termination=result.termination,
            turns=len(traj.turns) if traj else 0,
            seconds=result.timings.get("total", 0.0),
            judge_cost_usd=judge_cost,
            sandbox=result.sandbox,
            details=details,
        )
        error = result.infra_error
        if error is None and (traj is None or not traj.prompt_ids or not traj.completion_ids):
            why = (
                "overran its time limit"
                if result.termination == AGENT_TIMEOUT
                else (f"ended ({result.termination}) before the first reply")
            )
            error = f"no tokens to train on: the episode {why}"
        if error is not None:
            return cls(
                result.task_id,
                (traj and traj.prompt_ids) or [],
                (traj and traj.completion_ids) or [],
                (traj and traj.env_mask) or [],
                None,
                reward=None,
                infra_error=True,
                error=error,
                **common,
            )
        assert result.reward is not None and traj is not None
        return cls(
            result.task_id,
            traj.prompt_ids,
            traj.completion_ids,
            traj.env_mask,
            traj.logprobs,
            reward=result.reward.total,
            breakdown=result.reward.to_dict(),
            solved=result.resolved,
            **common,
        )


def rollout_row(r: Rollout) -> dict[str, Any]:
    """What metrics and the curriculum need of a rollout (small: it crosses processes)."""
    return {
        "task_id": r.task_id,
        "reward": None if r.infra_error else r.reward,
        "infra_error": r.infra_error,
        "error": r.error,
        "breakdown": None if r.infra_error else r.breakdown,
        "solved": r.solved and not r.infra_error,
        "turns": r.turns,
        "seconds": r.seconds,
        "completion_tokens": len(r.completion_ids),
        "assistant_tokens": sum(r.env_mask),
        "judge_cost_usd": r.judge_cost_usd,
        "termination": r.termination,
        "sandbox": r.sandbox,
    }


def rollout_metrics(rollouts: list[Rollout]) -> dict[str, float]:
    """Per-call numbers of `rollouts` (see `metrics_of_rows`)."""
    return metrics_of_rows([rollout_row(r) for r in rollouts])


def metrics_of_rows(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per-call numbers over `rollout_row`s (see the module docstring)."""
    n = len(rows)
    scored = [r for r in rows if r["breakdown"] is not None]
    ok = [r["breakdown"] for r in scored]
    metrics = {
        "rollout/count": float(n),
        "rollout/infra_error_rate": (n - len(ok)) / n if n else 0.0,
        "rollout/turns": mean(r["turns"] for r in rows),
        "rollout/seconds": mean(r["seconds"] for r in rows),
        "rollout/completion_tokens": mean(r["completion_tokens"] for r in rows),
        "rollout/assistant_tokens": mean(r["assistant_tokens"] for r in rows),
        "judge/cost_usd": sum(r["judge_cost_usd"] for r in rows),
    }
    if ok:
        judged = [b["judge"] for b in ok if b["judge"] is not None]
        metrics.update(
            {
                "reward/total": mean(b["total"] for b in ok),
                "reward/tests": mean(b["tests"] for b in ok),
                "reward/solved_rate": mean(float(r["solved"]) for r in scored),
                "reward/judge_missing_rate": mean(
                    float(b["judge"] is None and b["w_judge"] > 0) for b in ok
                ),
            }
        )
        if judged:
            metrics["reward/judge"] = mean(judged)
    for reason, count in Counter(r["termination"] for r in rows).items():
        metrics[f"rollout/termination/{reason}"] = count / n
    keys = sorted({k for r in rows for k in r["sandbox"]})
    for key in keys:
        metrics[f"sandbox/{key}"] = mean(r["sandbox"].get(key, 0.0) for r in rows)
    return metrics


def save_rollouts(rollouts: list[Rollout], path: Path) -> None:
    """One JSON line per rollout: ids, mask, reward, termination, details (messages etc.)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for r in rollouts:
            fh.write(json.dumps(asdict(r), default=str) + "\n")


def mean(values) -> float:
    """The mean of `values`, 0.0 for none."""
    values = list(values)
    return float(sum(values) / len(values)) if values else 0.0
