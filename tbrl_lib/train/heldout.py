"""Held-out evaluation of a family: seeds never trained on, through the evaluation harness.

Training seeds start at `SFTSettings.first_seed` (1000); held-out seeds are `0..n-1`, so the
two never meet. `evaluate_policy` runs `run_eval` with any policy object (a checkpoint's
`HFPolicy`, the trainer's own `TokenPolicy`) and returns the harness's summary plus its
flat `eval/...` metrics, with `eval/solve_rate` (= accuracy: every test passed).

Left out: pass@k for k > 1 (one attempt per instance keeps the CPU demo short).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.evaluate.harness import run_eval
from tbrl_lib.evaluate.results import RunConfig, eval_metrics
from tbrl_lib.synth.generate import make_task
from tbrl_lib.tasks.model import Task


def heldout_tasks(family: str, n: int, difficulty: str = "easy", first_seed: int = 0) -> list[Task]:
    return [make_task(family, first_seed + i, difficulty) for i in range(n)]


def evaluate_policy(
    policy: Any,
    tasks: list[Task],
    out_dir: str | Path,
    name: str,
    max_turns: int = 3,
    max_tokens_per_turn: int = 96,
    concurrency: int = 4,
) -> dict[str, Any]:
    """One attempt per task with the rule judge; returns summary + `eval/...` metrics."""
    episode = EpisodeLimits(max_turns=max_turns, max_tokens_per_turn=max_tokens_per_turn)
    config = RunConfig(
        policy=name, tasks_source="heldout", concurrency=concurrency, judge="rule", episode=episode
    )
    results = run_eval(tasks, config, out_dir, progress=False, policy=policy)
    metrics = eval_metrics(results.summary)
    metrics["eval/solve_rate"] = metrics["eval/accuracy"]
    return {"summary": results.summary, "metrics": metrics, "out": str(out_dir)}
