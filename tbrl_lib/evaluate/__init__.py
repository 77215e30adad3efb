"""tbrl_lib.evaluate: the benchmark harness (Terminal-Bench style runs, pass@k, intervals).

Public API:
- `run_eval(tasks, RunConfig(policy=..., attempts=..., episode=..., reward=...), out_dir)`
  (and `run_eval_async` inside an event loop) -> `RunResults`, resumable from `out_dir`;
  every trial is one `tbrl_lib.rollout.run_rollout`, the rollout training uses;
- `RunResults.load(run_dir)`, `.summary`, `.task_rates()`; `TrialResult`, `FailureMode`,
  `RunConfig`; `eval_metrics(summary)` -> flat `eval/...` metrics for a trainer's log;
- `report.compare_runs(a, b)` -> paired `stats.Comparison`; tables and plots in `report`;
- `stats`: `pass_at_k`, `wilson_interval`, `bootstrap_mean_interval`, `paired_comparison`.
CLI: `tbrl eval run|show|compare` (`tbrl_lib/cli/evaluate.py`); notebook: `notebooks/05_eval.ipynb`,
which takes from this face also `load_tasks` and the trajectories' `live_viewer`.
"""

from tbrl_lib.evaluate import report
from tbrl_lib.evaluate.harness import run_eval, run_eval_async
from tbrl_lib.evaluate.report import compare_runs
from tbrl_lib.evaluate.results import (
    ConfigMismatch,
    FailureMode,
    RunConfig,
    RunResults,
    TrialResult,
    eval_metrics,
)
from tbrl_lib.tasks import load_tasks
from tbrl_lib.viewers.live import live_viewer

__all__ = [
    "ConfigMismatch",
    "FailureMode",
    "RunConfig",
    "RunResults",
    "TrialResult",
    "compare_runs",
    "eval_metrics",
    "live_viewer",
    "load_tasks",
    "report",
    "run_eval",
    "run_eval_async",
]
