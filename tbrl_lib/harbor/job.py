"""A Harbor job folder read into tbrl's `results.json`, so `tbrl eval show|compare` read it.

Harbor writes one folder per trial, each with a `result.json` (`harbor.models.trial.result.
TrialResult`): the task's name, the verifier's rewards, the agent's context (tokens,
`metadata` with tbrl's termination and turns when the agent was tbrl's), an exception if
the trial failed, and timings per phase. One tbrl `TrialResult` per Harbor trial:

- score = the verifier's `reward` (clipped to [0, 1]); resolved = a reward of 1 (every test
  passed, as tbrl and Terminal-Bench count it); no judge runs in Harbor, so `reward` and
  `judge_score` stay None;
- failure mode = tbrl's own rule (`evaluate.harness.failure_mode`) on the agent's
  termination, with Harbor's exceptions mapped: `AgentTimeoutError` -> agent_timeout,
  `VerifierTimeoutError` -> test_timeout; the task's Dockerfile failing a step in Harbor's
  build (BuildKit's `failed to solve`, no sign of the network or disk failing:
  `sandbox.backends.docker.build_log.NETWORK`) -> task_error, first line naming the step, then its error
  lines, as tbrl's harness reports it; anything else (the environment did not start, the
  verifier crashed, the agent raised) -> infra_error with the exception's text; both are
  out of the denominators, as in tbrl's harness;
- attempts number a task's trials in the order they started.

`phase_seconds` gives the per-phase timings (environment setup, agent setup, agent,
verifier) that the benchmark reports; they are not part of `results.json`'s format.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from tbrl_lib.docker.build_log import NETWORK
from tbrl_lib.evaluate.harness import failure_mode
from tbrl_lib.evaluate.results import UNSCORED, FailureMode, RunConfig, RunResults, TrialResult
from tbrl_lib.harbor import TRAJECTORY_FILE
from tbrl_lib.tasks.model import Task

EXCEPTION_MODES = {
    "AgentTimeoutError": FailureMode.agent_timeout,
    "VerifierTimeoutError": FailureMode.test_timeout,
}
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")
BUILD_FAILED = "failed to solve"
"""BuildKit's last line when a Dockerfile step fails (Harbor raises it in a RuntimeError)."""
FAILED_STEP = re.compile(r"^ > (\[.*?\] .*?):?$", re.MULTILINE)
ERROR_LINE = re.compile(r"^\d+\.\d+ (.*\b(ERROR|E:|error|fatal:).*)$", re.MULTILINE)


def _build_error(task_id: str, message: str) -> str:
    """`task T: its image does not build in Harbor: [main 3/5] RUN ...`, then the step's
    error lines (at most six)."""
    step = FAILED_STEP.search(message)
    reasons = list(dict.fromkeys(m.group(1) for m in ERROR_LINE.finditer(message)))[:6]
    head = f"task {task_id}: its image does not build in Harbor: "
    return "\n".join([head + (step.group(1) if step else "a Dockerfile step failed"), *reasons])


def trial_results(job_dir: Path) -> list[dict[str, Any]]:
    """Every trial's `result.json` in a job folder, in the order the trials started."""
    found = [
        json.loads(path.read_text())
        for path in sorted(job_dir.glob("*/result.json"))
        if path.parent.is_dir()
    ]
    if not found:
        raise FileNotFoundError(
            f"{job_dir}: no trial results (*/result.json); did `harbor run` run?"
        )
    return sorted(found, key=lambda r: (r.get("started_at") or "", r["trial_name"]))


def _seconds(timing: dict[str, Any] | None) -> float:
    if not timing or not timing.get("started_at") or not timing.get("finished_at"):
        return 0.0
    start, end = (datetime.fromisoformat(timing[k]) for k in ("started_at", "finished_at"))
    return (end - start).total_seconds()


def phase_seconds(result: dict[str, Any]) -> dict[str, float]:
    """Seconds per phase of one Harbor trial, and `total`."""
    times = {phase: _seconds(result.get(phase)) for phase in PHASES}
    return times | {"total": _seconds(result)}


def to_trial(
    result: dict[str, Any], attempt: int, task: Task | None, job_dir: Path, run_dir: Path
) -> TrialResult:
    """One Harbor trial as tbrl's `TrialResult` (the rules are in the module docstring)."""
    agent = result.get("agent_result") or {}
    meta = agent.get("metadata") or {}
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    score = min(max(float(rewards.get("reward", 0.0)), 0.0), 1.0)
    resolved = score >= 1.0
    exception = result.get("exception_info")
    error = None
    mode = failure_mode(meta.get("termination"), resolved, test_timed_out=False)
    if exception:
        kind, message = exception.get("exception_type", ""), exception.get("exception_message", "")
        error = f"{kind}: {message}".strip()
        mode = EXCEPTION_MODES.get(kind, FailureMode.infra_error)
        if BUILD_FAILED in message and not NETWORK.search(message):
            mode, error = FailureMode.task_error, _build_error(result["task_name"], message)
        resolved = resolved and mode not in UNSCORED
    trajectory = job_dir / result["trial_name"] / "agent" / TRAJECTORY_FILE
    times = phase_seconds(result)
    return TrialResult(
        task_id=result["task_name"],
        attempt=attempt,
        resolved=resolved,
        score=score if mode not in UNSCORED else 0.0,
        failure_mode=FailureMode.resolved if resolved else mode,
        difficulty=task.difficulty.value if task else "unknown",
        category=task.category if task else "unknown",
        task_hash=task.content_hash() if task else "",
        termination=meta.get("termination"),
        tokens_in=agent.get("n_input_tokens") or 0,
        tokens_out=agent.get("n_output_tokens") or 0,
        turns=meta.get("turns") or 0,
        agent_seconds=times["agent_execution"],
        test_seconds=times["verifier"],
        total_seconds=times["total"],
        error=error,
        trajectory=str(trajectory.relative_to(run_dir)) if trajectory.exists() else None,
        finished_at=result.get("finished_at") or datetime.now().isoformat(),
    )


def read_job(job_dir: Path, config: RunConfig, tasks: list[Task], run_dir: Path) -> RunResults:
    """The job's trials as `RunResults`, saved to `run_dir/results.json`."""
    by_id = {task.id: task for task in tasks}
    results = RunResults(config=config)
    attempts: dict[str, int] = {}
    for raw in trial_results(job_dir):
        attempt = attempts.get(raw["task_name"], 0)
        attempts[raw["task_name"]] = attempt + 1
        results.add(to_trial(raw, attempt, by_id.get(raw["task_name"]), job_dir, run_dir))
    job_file = job_dir / "result.json"
    if job_file.exists():  # the job's own start and end (naive local times, as Harbor writes)
        results.wall_seconds = _seconds(json.loads(job_file.read_text()))
    results.save(run_dir)
    return results
