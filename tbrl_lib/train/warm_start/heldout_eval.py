"""Held-out evaluation around and during a GRPO run on a procedural family.

`HeldoutEvaluator` holds what every evaluation of one run shares: the held-out instances
(`heldout.heldout_tasks`), the run's `RolloutConfig` (same episode and reward as training)
and the sampling temperature (the training one, so an evaluation measures the policy GRPO
samples from). `evaluate_checkpoint` runs a saved model (base, warm start, final) through the
evaluation harness; `HeldoutDuringTraining` is the TRL callback that, every `heldout.every`
steps and at the last one, runs the trainer's own policy (current weights) and hands
`eval/solve_rate`, `eval/mean_reward`, ... to the trainer, which logs them with that step's
numbers (metrics.jsonl and every tracker in `grpo.report_to`). The
before/after table compares the models with `tbrl eval compare`'s paired interval.

An engine outage that outlasts `rollout.sandbox.engine_wait_s` during any of these
evaluations stops the run as a training outage does (`engine_outage.EngineWait`): the lines
say `tbrl train`, and the one-line stop names the evaluation and the command that resumes the
run (not evaluation's "rerun the same command").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from tbrl_lib.evaluate.harness import OutageWording
from tbrl_lib.evaluate.report import compare_runs
from tbrl_lib.policies.base import Policy
from tbrl_lib.policies.hf import HFPolicy
from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.rollouts.engine_outage import WHO, EngineWait
from tbrl_lib.train.warm_start.heldout import evaluate_policy, heldout_tasks


@dataclass
class HeldoutEvaluator:
    """The held-out instances of a run and how they are evaluated; results under `out/<name>/`."""

    tasks: list[Task]
    rollout: RolloutConfig
    temperature: float
    out: Path
    concurrency: int = 4
    enable_thinking: bool = True
    outage: EngineWait | None = None
    """The training run's outage handling (its resume command); None: evaluation's wording."""

    @classmethod
    def for_run(
        cls, config: TrainConfig, rollout: RolloutConfig, out: Path, run_dir: Path | None = None
    ) -> HeldoutEvaluator | None:
        """The run's evaluator, or None when it evaluates nothing (`heldout.instances: 0`);
        `run_dir`: the training run's folder (an outage stop names how to resume it)."""
        data = config.data
        if not (data.family and config.heldout.instances):
            return None
        tasks = heldout_tasks(data.family, config.heldout.instances, data.family_difficulty)
        return cls(
            tasks,
            rollout,
            config.grpo.temperature,
            out,
            config.launch.sandbox_concurrency,
            config.model.enable_thinking,
            EngineWait.for_run(config, run_dir) if run_dir is not None else None,
        )

    def evaluate(self, policy: Policy, name: str) -> dict[str, Any]:
        """Evaluate `policy` on the held-out instances: `summary`, `metrics`, `out`, `results`."""
        return evaluate_policy(
            policy,
            self.tasks,
            self.out / name,
            name,
            self.rollout,
            self.concurrency,
            self.wording(name),
        )

    def wording(self, name: str) -> OutageWording:
        """How an outage that stops the evaluation `name` is worded: training's, with the
        resume command as the checkpoints stand now (none is saved while it runs)."""
        if self.outage is None:
            return OutageWording()
        return OutageWording(
            WHO, f"training stopped in the held-out evaluation {name}; {self.outage.resume()}"
        )

    def evaluate_checkpoint(self, path: str | Path, name: str, seed: int = 0) -> dict[str, Any]:
        policy = HFPolicy(
            path, temperature=self.temperature, seed=seed, enable_thinking=self.enable_thinking
        )
        return self.evaluate(policy, name)


class HeldoutDuringTraining(TrainerCallback):
    """Every `every` steps (and at the last one), evaluate `policy` (the trainer's) on the
    held-out instances; the metrics go to `sink`, which the trainer logs with that step's own
    (`on_step_end` runs before the step's log)."""

    def __init__(self, evaluator: HeldoutEvaluator, policy: Policy, every: int, sink: dict) -> None:
        self.evaluator, self.policy, self.every, self.sink = evaluator, policy, every, sink
        self.results: dict[int, dict[str, Any]] = {}
        """Step -> that step's evaluation, as `HeldoutEvaluator.evaluate` returns it."""

    def on_step_end(self, args, state, control, **kwargs):
        step = state.global_step
        if step % self.every and step != state.max_steps:
            return control
        result = self.evaluator.evaluate(self.policy, f"step-{step:05d}")
        self.sink.update(result["metrics"])
        self.results[step] = result
        return control


def before_after_table(evals: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per evaluated model (base, warm start, final): solve rate with its interval,
    mean reward, its folder under `eval/`; then the paired difference of each model against
    the one before it."""
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
