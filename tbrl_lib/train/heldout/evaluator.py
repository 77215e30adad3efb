"""Held-out evaluation around and during a GRPO run on procedural families.

`HeldoutEvaluator` holds what every evaluation of one run shares: the held-out instances of
every family (`split.heldout_tasks`), optionally the easiest bundled tasks
(`heldout.bundled`, a transfer check run as an evaluation of its own, `<name>-bundled`), the
run's `RolloutConfig` (same episode and reward as training) and the sampling temperature
(the training one, so an evaluation measures the policy GRPO samples from).
`evaluate_checkpoint` runs a saved model (base, warm start, final) through the evaluation
harness; `HeldoutDuringTraining` is the TRL callback that, every `heldout.every`
steps and at the last one, runs the trainer's own policy (current weights) and hands
`eval/solve_rate`, `eval/mean_reward`, ... to the trainer, which logs them with that step's
numbers (metrics.jsonl and every tracker in `grpo.report_to`), with each family's own
`eval/family/<name>/solve_rate`. The before/after table compares the models with `tbrl eval
compare`'s paired interval, pooled over the families; `family_table` does the same per family
and `bundled_table` for the bundled tasks.

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
from tbrl_lib.evaluate.stats import breakdown, paired_comparison, wilson_interval
from tbrl_lib.policies.base import Policy
from tbrl_lib.policies.hf import HFPolicy
from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.model import Difficulty, Task
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.heldout.split import evaluate_policy, family_of, heldout_tasks
from tbrl_lib.train.plan.memory_plan import generation_token_budget
from tbrl_lib.train.step.engine_outage import WHO, EngineWait

BUNDLED = "bundled"
"""The name the bundled tasks go by beside the families (folder suffix, table rows)."""


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
    bundled: list[Task] | None = None
    """The easiest bundled tasks, evaluated with every checkpoint as `<name>-bundled`."""
    max_batch_tokens: int | None = None
    """A checkpoint's generation batch bound (`gpu_memory.generation_token_budget`)."""

    @classmethod
    def for_run(
        cls, config: TrainConfig, rollout: RolloutConfig, out: Path, run_dir: Path | None = None
    ) -> HeldoutEvaluator | None:
        """The run's evaluator, or None when it evaluates nothing (`heldout.instances: 0`);
        `run_dir`: the training run's folder (an outage stop names how to resume it)."""
        data, heldout = config.data, config.heldout
        if not (data.families and heldout.instances):
            return None
        tasks = [
            task
            for family in data.families
            for task in heldout_tasks(family, heldout.instances, data.family_difficulty)
        ]
        return cls(
            tasks,
            rollout,
            config.grpo.temperature,
            out,
            config.launch.sandbox_concurrency,
            config.model.enable_thinking,
            EngineWait.for_run(config, run_dir) if run_dir is not None else None,
            easiest_tasks(data.tasks, heldout.bundled) if heldout.bundled else None,
            generation_token_budget(config),
        )

    def evaluate(self, policy: Policy, name: str) -> dict[str, Any]:
        """Evaluate `policy` on the held-out instances: `summary`, `metrics` (with each
        family's solve rate), `out`, `results`."""
        result = self._run(policy, self.tasks, name)
        families = {task.id: family_of(task) or BUNDLED for task in self.tasks}
        result["metrics"] |= {
            f"eval/family/{family}/solve_rate": group["accuracy"]
            for family, group in breakdown(result["results"].task_rates(), families).items()
        }
        return result

    def evaluate_bundled(self, policy: Policy, name: str) -> dict[str, Any] | None:
        """Evaluate `policy` on the bundled tasks as `<name>-bundled` (None: there are none)."""
        if not self.bundled:
            return None
        return self._run(policy, self.bundled, f"{name}-{BUNDLED}")

    def _run(self, policy: Policy, tasks: list[Task], name: str) -> dict[str, Any]:
        return evaluate_policy(
            policy, tasks, self.out / name, name, self.rollout, self.concurrency, self.wording(name)
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
        """The saved model at `path` on the held-out instances; on the bundled tasks too
        (`result["bundled"]`, None without them), with the same loaded policy."""
        policy = HFPolicy(
            path,
            temperature=self.temperature,
            seed=seed,
            enable_thinking=self.enable_thinking,
            max_batch_tokens=self.max_batch_tokens,
        )
        return self.evaluate(policy, name) | {"bundled": self.evaluate_bundled(policy, name)}


def easiest_tasks(source: str, n: int) -> list[Task]:
    """The `n` easiest tasks of `source` (by difficulty, then id): the bundled tasks a model
    trained on procedural families is checked on."""
    tasks, _ = load_tasks(source)
    return sorted(tasks, key=lambda t: (list(Difficulty).index(t.difficulty), t.id))[:n]


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


def family_table(evals: dict[str, dict[str, Any]], tasks: list[Task]) -> list[dict[str, Any]]:
    """Per family, then pooled over them (`all`): each evaluated model's solve rate on that
    family's held-out instances with its Wilson interval and, from the second model on, the
    paired difference against the model before it (95% bootstrap over the instances)."""
    groups: dict[str, list[str]] = {}
    for task in tasks:
        groups.setdefault(family_of(task) or BUNDLED, []).append(task.id)
    if len(groups) > 1:
        groups["all"] = [task.id for task in tasks]
    rates = {name: result["results"].task_rates() for name, result in evals.items()}
    rows, names = [], list(evals)
    for family, ids in groups.items():
        for i, name in enumerate(names):
            mine = {t: rates[name][t] for t in ids if t in rates[name]}
            low, high = wilson_interval(sum(mine.values()), len(mine))
            row: dict[str, Any] = {
                "family": family,
                "model": name,
                "instances": len(mine),
                "solve_rate": sum(mine.values()) / len(mine),
                "solve_rate_ci": [low, high],
                "interval (Wilson 95%)": f"[{low:.2f}, {high:.2f}]",
            }
            if i:
                before = rates[names[i - 1]]
                cmp = paired_comparison(mine, {t: before[t] for t in ids if t in before})
                row |= {
                    "difference": cmp.difference,
                    "difference_ci": [cmp.ci_low, cmp.ci_high],
                    "vs_previous": f"{cmp.difference:+.2f} [{cmp.ci_low:+.2f}, {cmp.ci_high:+.2f}]",
                }
            rows.append(row)
    return rows


def bundled_table(evals: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each model's solve rate on the bundled tasks (models evaluated without them left out)."""
    rows = []
    for name, result in evals.items():
        bundled = result.get("bundled")
        if bundled:
            metrics = bundled["metrics"]
            rows.append(
                {
                    "model": name,
                    "tasks": len(bundled["results"].task_rates()),
                    "solve_rate": metrics["eval/solve_rate"],
                    "mean_reward": metrics["eval/mean_reward"],
                    "folder": Path(bundled["out"]).name,
                }
            )
    return rows
