"""What an evaluation run leaves behind: `results.json` (config, trials, summary).

One `TrialResult` per (task, attempt). `RunResults` holds the run's config and its
trials, writes `results.json` atomically after every trial (temp file + `os.replace`,
so a kill at any instant leaves either the old or the new file, never half of one), and
on reopening refuses a run whose config differs in what changes the numbers (policy,
task source, timeout scale). Finished trials are kept; trials that ended in an infra
error or a task error are redone on resume, since they say nothing about the agent (and the
task may have been fixed since).

The summary counts a trial's outcome per task and averages over tasks, over *scored*
trials only: an infra error (the engine, the network or the verifier failed) and a task error
(the task's own image does not build here) say nothing about the agent, so they are left out
of every denominator and counted apart (`infra_errors`; `task_errors`, with each broken task's
reason in `task_error_tasks`; `unscored_tasks` for tasks with no scored trial). `accuracy` = mean per-task resolve rate,
None ("n/a") when no trial was scored; `accuracy_ci` is always the 95% Wilson interval with
tasks as the unit (never zero-width: 3 of 3 gives [43.9%, 100%]); with several attempts per
task a percentile bootstrap over tasks (`accuracy_ci_bootstrap`, else None) is reported
beside it, never alone. Then unbiased pass@k for every k up to the fewest scored attempts
any task has, breakdowns by difficulty and category, failure-mode counts and token/turn
statistics. Timings live outside `summary`, so a resumed run's summary equals an
uninterrupted one's.

Left out: plots and tables (see `tbrl_lib.evaluate.report`).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections import Counter, defaultdict
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.evaluate import stats
from tbrl_lib.rewards.reward import RewardConfig
from tbrl_lib.rollout.config import RolloutConfig
from tbrl_lib.sandbox.config import SandboxConfig

RESULTS_FILE = "results.json"


class FailureMode(str, Enum):
    """Why a trial ended the way it did; `resolved` is the one success."""

    resolved = "resolved"
    unresolved = "unresolved"
    """The agent finished and the tests did not all pass."""
    agent_timeout = "agent_timeout"
    test_timeout = "test_timeout"
    parse_error = "parse_error"
    no_action = "no_action"
    context_overflow = "context_overflow"
    storage_limit = "storage_limit"
    """The agent wrote past the sandbox's storage limit: the sandbox was removed, score 0."""
    infra_error = "infra_error"
    """The engine, the network during a build, or the verifier failed: not the agent's fault."""
    task_error = "task_error"
    """The task itself is broken here (its Dockerfile does not build, its image is missing):
    neither the agent's fault nor the infrastructure's; fix the task."""


UNSCORED = frozenset({FailureMode.infra_error, FailureMode.task_error})
"""Failure modes that say nothing about the agent: out of every denominator, redone on resume."""


class TrialResult(BaseModel):
    """One attempt at one task: outcome, cost and where its trajectory lies."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    attempt: int = Field(ge=0)
    resolved: bool
    score: float = Field(ge=0.0, le=1.0)
    """Weighted test score (1.0 = every test passed)."""
    reward: float | None = None
    """The training reward of this rollout (tests + judge, `RunConfig.reward`)."""
    judge_score: float | None = None
    """The judge's process score; None when no judge ran or every judge failed."""
    failed_tests: list[str] = Field(default_factory=list)
    """Tests that failed or never reported (empty for script-scored tasks)."""
    failure_mode: FailureMode
    difficulty: str = "unknown"
    category: str = "unknown"
    task_hash: str = ""
    """`Task.content_hash()`; a resumed run refuses a task that changed since."""
    termination: str | None = None
    """The agent's own termination reason, verbatim."""
    tokens_in: int = 0
    tokens_out: int = 0
    turns: int = 0
    agent_seconds: float = 0.0
    test_seconds: float = 0.0
    total_seconds: float = 0.0
    infra_retries: int = 0
    error: str | None = None
    trajectory: str | None = None
    """Path of the saved trajectory, relative to the run folder."""
    finished_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.attempt)


class RunConfig(BaseModel):
    """How the run was made. `IDENTITY` fields must match for a run to be resumed.

    `episode` (limits and tools) and `reward` are the same objects training uses
    (`tbrl_lib.rollout.RolloutConfig`); the episode's time limit stays None so each task's
    own agent timeout (x `timeout_scale`) applies."""

    model_config = ConfigDict(extra="forbid")

    policy: str
    tasks_source: str = "(python)"
    attempts: int = Field(default=1, ge=1)
    timeout_scale: float = Field(default=1.0, gt=0)
    limit: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=1, ge=1)
    episode: EpisodeLimits = Field(default_factory=EpisodeLimits)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    """Weights and judge (`reward.judge`, the offline rule judge by default; `none`: tests only)."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Where the sandboxes run (`sandbox.backend=ray`, ...); each trial's are labelled with the
    run's id. Not part of the identity: a backend does not change a score."""

    IDENTITY: ClassVar[tuple[str, ...]] = (
        "policy",
        "tasks_source",
        "timeout_scale",
        "episode",
        "reward",
    )

    @model_validator(mode="before")
    @classmethod
    def _judge_inside_reward(cls, data: Any) -> Any:
        """results.json of runs made before the judge moved into `reward` name it at the top."""
        if isinstance(data, dict) and "judge" in data:
            data = dict(data)
            data["reward"] = {**(data.get("reward") or {}), "judge": data.pop("judge")}
        return data

    def rollout_config(self, run_id: str = "eval") -> RolloutConfig:
        """The rollout settings of every trial."""
        return RolloutConfig(
            episode=self.episode,
            reward=self.reward,
            timeout_scale=self.timeout_scale,
            sandbox=self.sandbox.model_copy(update={"run_id": run_id}),
        )

    @property
    def timeouts_note(self) -> str:
        if self.timeout_scale == 1.0:
            return "each task's own agent and test timeouts (Terminal-Bench rules)"
        return (
            f"task timeouts scaled x{self.timeout_scale:g}: NOT comparable with "
            "Terminal-Bench scores, which forbid changing them"
        )


class ConfigMismatch(ValueError):
    """A resumed run was asked for with a config that would change its numbers."""


class RunResults(BaseModel):
    """A run's config, its finished trials, and the summary computed from them."""

    config: RunConfig
    trials: list[TrialResult] = Field(default_factory=list)
    wall_seconds: float = 0.0
    """Time spent running, summed over every session of a resumed run."""
    summary: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def open(cls, out_dir: str | Path, config: RunConfig) -> RunResults:
        """Load `out_dir/results.json` if present (checking the config), else start fresh."""
        path = Path(out_dir) / RESULTS_FILE
        if not path.exists():
            return cls(config=config)
        try:
            previous = cls.model_validate_json(path.read_text())
        except ValueError as exc:
            raise ValueError(
                f"{path} exists but is not a tbrl results file ({exc}); "
                "pick another --out directory or remove it"
            ) from exc
        diffs = [
            f"{name}: run has {getattr(previous.config, name)!r}, now {getattr(config, name)!r}"
            for name in RunConfig.IDENTITY
            if getattr(previous.config, name) != getattr(config, name)
        ]
        if diffs:
            raise ConfigMismatch(
                f"cannot resume {path}: its config differs ({'; '.join(diffs)}). "
                "Rerun with the original settings to resume, or use a new --out directory."
            )
        previous.trials = [t for t in previous.trials if t.failure_mode not in UNSCORED]
        previous.config = config
        return previous

    def done(self) -> dict[tuple[str, int], TrialResult]:
        return {t.key: t for t in self.trials}

    def add(self, trial: TrialResult) -> None:
        self.trials = [t for t in self.trials if t.key != trial.key] + [trial]
        self.trials.sort(key=lambda t: t.key)

    def save(self, out_dir: str | Path) -> Path:
        """Recompute the summary and replace results.json atomically."""
        self.summary = summarize(self.trials, self.config) if self.trials else {}
        path = Path(out_dir) / RESULTS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(self.model_dump_json(indent=1))
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, run: str | Path) -> RunResults:
        """Read a run from its folder or its results.json; the summary is recomputed from
        the trials, so a run saved by an older tbrl reads with today's definitions."""
        path = Path(run)
        if path.is_dir():
            path = path / RESULTS_FILE
        if not path.exists():
            raise FileNotFoundError(
                f"no results at {path}: pass a run folder made by `tbrl eval run`"
            )
        loaded = cls.model_validate_json(path.read_text())
        loaded.summary = summarize(loaded.trials, loaded.config) if loaded.trials else {}
        return loaded

    def task_rates(self) -> dict[str, float]:
        return task_rates(self.trials)


def task_rates(trials: list[TrialResult]) -> dict[str, float]:
    """Task id -> fraction of its trials resolved."""
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for t in trials:
        outcomes[t.task_id].append(t.resolved)
    return {task: sum(v) / len(v) for task, v in sorted(outcomes.items())}


def _describe(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


def summarize(trials: list[TrialResult], config: RunConfig) -> dict[str, Any]:
    """Headline numbers of a set of trials (see the module docstring for definitions)."""
    if not trials:
        raise ValueError("cannot summarize a run with no trials")
    scored = [t for t in trials if t.failure_mode not in UNSCORED]
    broken = [t for t in trials if t.failure_mode == FailureMode.task_error]
    modes = Counter(t.failure_mode.value for t in trials)
    summary: dict[str, Any] = {
        "n_trials": len(trials),
        "n_scored": len(scored),
        "infra_errors": modes.get(FailureMode.infra_error.value, 0),
        "task_errors": len(broken),
        "task_error_tasks": {t.task_id: (t.error or "").split("\n", 1)[0] for t in broken},
        "unscored_tasks": sorted({t.task_id for t in trials} - {t.task_id for t in scored}),
        "failure_modes": {m.value: modes.get(m.value, 0) for m in FailureMode},
        "tokens_in": _describe([t.tokens_in for t in trials]),
        "tokens_out": _describe([t.tokens_out for t in trials]),
        "turns": _describe([t.turns for t in trials]),
        "policy": config.policy,
        "tasks_source": config.tasks_source,
        "timeout_scale": config.timeout_scale,
        "timeouts": config.timeouts_note,
    }
    return summary | _accuracy(scored)


def _accuracy(scored: list[TrialResult]) -> dict[str, Any]:
    """Accuracy, its intervals, pass@k and breakdowns over scored trials (None when none)."""
    if not scored:
        return {
            "n_tasks": 0,
            "accuracy": None,
            "accuracy_ci": None,
            "accuracy_ci_bootstrap": None,
            "attempts_per_task": None,
            "resolved_trials": 0,
            "mean_score": None,
            "mean_reward": None,
            "pass_at_k": {},
            "by_difficulty": {},
            "by_category": {},
            "per_task": {},
        }
    rates = task_rates(scored)
    per_task = Counter(t.task_id for t in scored)
    solved = Counter(t.task_id for t in scored if t.resolved)
    min_attempts = min(per_task.values())
    counts = [(per_task[task], solved[task]) for task in rates]
    first = {t.task_id: t for t in scored}
    several = max(per_task.values()) > 1
    return {
        "n_tasks": len(rates),
        "accuracy": sum(rates.values()) / len(rates),
        "accuracy_ci": list(stats.wilson_interval(sum(rates.values()), len(rates))),
        "accuracy_ci_bootstrap": list(stats.bootstrap_mean_interval(list(rates.values())))
        if several
        else None,
        "attempts_per_task": {"min": min_attempts, "max": max(per_task.values())},
        "resolved_trials": sum(t.resolved for t in scored),
        "mean_score": statistics.fmean(t.score for t in scored),
        "mean_reward": statistics.fmean(rewards)
        if (rewards := [t.reward for t in scored if t.reward is not None])
        else None,
        "pass_at_k": {str(k): stats.mean_pass_at_k(counts, k) for k in range(1, min_attempts + 1)},
        "by_difficulty": stats.breakdown(rates, {k: v.difficulty for k, v in first.items()}),
        "by_category": stats.breakdown(rates, {k: v.category for k, v in first.items()}),
        "per_task": rates,
    }


def eval_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """Flat `eval/...` metrics of a summary, for a trainer's or tracker's log.

    eval/accuracy, eval/accuracy_ci_low, eval/accuracy_ci_high (Wilson), eval/mean_score,
    eval/mean_reward (NaN when no trial was scored), eval/infra_errors and eval/task_errors
    (counts), eval/pass@K for each K,
    eval/failure/<mode> (share of all trials), eval/turns_mean, eval/tokens_out_mean.
    """
    n = summary["n_trials"]
    nan = float("nan")
    low, high = summary["accuracy_ci"] or (nan, nan)
    metrics = {
        "eval/accuracy": nan if summary["accuracy"] is None else summary["accuracy"],
        "eval/accuracy_ci_low": low,
        "eval/accuracy_ci_high": high,
        "eval/mean_score": nan if summary["mean_score"] is None else summary["mean_score"],
        "eval/mean_reward": nan if summary.get("mean_reward") is None else summary["mean_reward"],
        "eval/infra_errors": summary["infra_errors"],
        "eval/task_errors": summary.get("task_errors", 0),
        "eval/turns_mean": summary["turns"]["mean"],
        "eval/tokens_out_mean": summary["tokens_out"]["mean"],
    }
    metrics |= {f"eval/pass@{k}": v for k, v in summary["pass_at_k"].items()}
    metrics |= {
        f"eval/failure/{mode}": count / n for mode, count in summary["failure_modes"].items()
    }
    return metrics
