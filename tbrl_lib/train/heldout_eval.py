"""Held-out evaluation around and during a GRPO run on a procedural family.

`EvalPlan` holds what every evaluation of one run shares: the held-out instances
(`heldout.heldout_tasks`), the run's `RolloutConfig` (same episode and reward as training)
and the sampling temperature (the training one, so an evaluation measures the policy GRPO
samples from). `HeldoutEval` is the TRL callback: every `eval_every` steps it runs the
trainer's own policy (current weights) through the evaluation harness and hands
`eval/solve_rate`, `eval/mean_reward`, ... to the metrics writer for that step's line.
`evaluate_checkpoint` does the same for a saved model (base, warm start, final): the
before/after table compares those with `tbrl eval compare`'s paired interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.heldout import evaluate_policy, heldout_tasks
from tbrl_lib.train.presets import TrainConfig


@dataclass
class EvalPlan:
    tasks: list[Task]
    rollout: RolloutConfig
    temperature: float
    out: Path
    concurrency: int = 4
    enable_thinking: bool = True

    @classmethod
    def for_run(cls, config: TrainConfig, rollout: RolloutConfig, out: Path) -> EvalPlan | None:
        if not (config.family and config.eval_tasks):
            return None
        tasks = heldout_tasks(config.family, config.eval_tasks, config.family_difficulty)
        return cls(
            tasks,
            rollout,
            config.temperature,
            out,
            config.sandbox_concurrency,
            config.enable_thinking,
        )

    def run(self, policy: Any, name: str) -> dict[str, Any]:
        """Evaluate `policy` on the held-out instances; results under `out/<name>/`."""
        return evaluate_policy(
            policy, self.tasks, self.out / name, name, self.rollout, self.concurrency
        )

    def evaluate_checkpoint(self, path: str | Path, name: str, seed: int = 0) -> dict[str, Any]:
        from tbrl_lib.policies.hf import HFPolicy

        policy = HFPolicy(
            path, temperature=self.temperature, seed=seed, enable_thinking=self.enable_thinking
        )
        return self.run(policy, name)


class HeldoutEval(TrainerCallback):
    """Every `every` steps (and at the last one), evaluate the trainer's policy on the
    held-out instances; the metrics go to `sink` (merged into that step's metrics line)."""

    def __init__(self, plan: EvalPlan, policy_box: dict[str, Any], every: int, sink: dict) -> None:
        self.plan, self.policy_box, self.every, self.sink = plan, policy_box, every, sink
        self.results: dict[int, dict[str, Any]] = {}
        """Step -> the evaluation's result (`metrics`, `results`), as `EvalPlan.run` returns it."""

    def on_step_end(self, args, state, control, **kwargs):
        step = state.global_step
        if step % self.every and step != state.max_steps:
            return control
        result = self.plan.run(self.policy_box["policy"], f"step-{step:05d}")
        self.sink.update(result["metrics"])
        self.results[step] = result
        return control


def before_after_table(evals: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per evaluated model (base, warm start, final): solve rate with its interval,
    mean reward, its folder under `eval/`; then the paired difference of each model against
    the one before it."""
    from tbrl_lib.evaluate.report import compare_runs

    rows = []
    names = list(evals)
    for i, name in enumerate(names):
        metrics = evals[name]["metrics"]
        row = {
            "model": name,
            "solve_rate": metrics["eval/solve_rate"],
            "interval (Wilson 95%)": (
                f"[{metrics['eval/accuracy_ci_low']:.2f}, {metrics['eval/accuracy_ci_high']:.2f}]"
            ),
            "mean_reward": metrics["eval/mean_reward"],
            "folder": Path(evals[name]["out"]).name,  # under the run's eval/: its episodes
        }
        if i:
            cmp = compare_runs(evals[name]["results"], evals[names[i - 1]]["results"])
            row["vs_previous"] = f"{cmp.difference:+.2f} [{cmp.ci_low:+.2f}, {cmp.ci_high:+.2f}]"
        rows.append(row)
    return rows
