"""The benchmark harness: every task K times, each in a fresh sandbox, scored by the verifier.

`run_eval(tasks, policy_spec, attempts, concurrency, out_dir)` is the one entry point
(the CLI and notebook 05 call it). A trial is: build the task's image (once per task),
open a fresh sandbox, `run_episode` with the task's own agent timeout, `verify` with the
task's own test timeout, then one `TrialResult`. Terminal-Bench forbids changing the
timeouts; `timeout_scale` multiplies both and the summary then says the numbers are not
comparable. The verifier is the same one training rewards use, so eval and reward cannot
drift apart.

Infrastructure failures (Docker errors, an image that will not build, a verifier that
could not run) are retried once and then recorded as `infra_error`, never as an agent
failure. Every wait is bounded: the episode and the verifier each get their own limit
plus a grace period, after which the trial is ended and recorded.

`results.json` is rewritten atomically after every trial, so killing the process at any
moment loses at most the trials in flight; running the same command again resumes.

Left out: sharding a run over machines (run several harnesses on disjoint task lists and
merge their trials) and per-trial resource accounting beyond what the sandbox records.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from tbrl_lib.evaluate.results import ConfigMismatch, FailureMode, RunConfig, RunResults, TrialResult
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.tasks.model import Task

GRACE_SECONDS = 60.0
"""Extra time past a task's own limit before the harness itself stops a step."""

# The agent's termination reasons (by value) that are failure modes of their own. Any
# other reason (the agent submitted, ran out of turns or tokens) is `unresolved` when the
# tests fail; the reason itself is kept verbatim in `TrialResult.termination`.
TERMINATION_MODES: dict[str, FailureMode] = {
    "timeout": FailureMode.agent_timeout,
    "time_limit": FailureMode.agent_timeout,
    "agent_timeout": FailureMode.agent_timeout,
    "parse_error": FailureMode.parse_error,
    "parse_error_streak": FailureMode.parse_error,
    "no_action": FailureMode.no_action,
    "context_overflow": FailureMode.context_overflow,
    "infra_error": FailureMode.infra_error,
    "sandbox_error": FailureMode.infra_error,
}


class InfraError(RuntimeError):
    """A trial could not be run or scored for reasons outside the agent's control."""


def failure_mode(termination: str | None, resolved: bool, test_timed_out: bool) -> FailureMode:
    """One failure mode per trial. Resolved wins (tests passed even after a timeout, as in
    Terminal-Bench); then what stopped the agent; then a verifier timeout; else unresolved."""
    if resolved:
        return FailureMode.resolved
    mode = TERMINATION_MODES.get(termination or "")
    if mode is not None:
        return mode
    if test_timed_out:
        return FailureMode.test_timeout
    return FailureMode.unresolved


def run_eval(
    tasks: Sequence[Task],
    policy_spec: str,
    attempts: int,
    concurrency: int,
    out_dir: str | Path,
    timeout_scale: float = 1.0,
    tasks_source: str = "",
    limit: int | None = None,
    progress: bool = True,
) -> RunResults:
    """Run (or resume) an evaluation; returns the finished `RunResults` (also on disk)."""
    return asyncio.run(
        run_eval_async(
            tasks, policy_spec, attempts, concurrency, out_dir,
            timeout_scale=timeout_scale, tasks_source=tasks_source, limit=limit,
            progress=progress,
        )
    )


async def run_eval_async(
    tasks: Sequence[Task],
    policy_spec: str,
    attempts: int,
    concurrency: int,
    out_dir: str | Path,
    timeout_scale: float = 1.0,
    tasks_source: str = "",
    limit: int | None = None,
    progress: bool = True,
) -> RunResults:
    """`run_eval` for callers that already run an event loop (notebooks, the trainer)."""
    from tbrl_lib.policies import make_policy

    config = RunConfig(
        policy=policy_spec, tasks_source=tasks_source or "(python)", attempts=attempts,
        timeout_scale=timeout_scale, limit=limit, concurrency=concurrency,
    )
    selected = list(tasks)[:limit] if limit else list(tasks)
    if not selected:
        raise ValueError(f"no tasks to evaluate in {config.tasks_source!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = RunResults.open(out, config)
    _check_tasks_unchanged(results, selected)
    done = results.done()
    pending = [
        (task, attempt)
        for attempt in range(attempts)
        for task in selected
        if (task.id, attempt) not in done
    ]
    policy = make_policy(policy_spec)
    runner = _TrialRunner(policy, out, timeout_scale)
    wall_before, started = results.wall_seconds, time.monotonic()
    bar = tqdm(
        total=len(selected) * attempts, initial=len(selected) * attempts - len(pending),
        desc=f"eval {policy_spec}", unit="trial", disable=not progress,
    )
    queue: asyncio.Queue[tuple[Task, int]] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            task, attempt = queue.get_nowait()
            trial = await runner.run(task, attempt)
            results.add(trial)
            results.wall_seconds = wall_before + time.monotonic() - started
            results.save(out)
            bar.update(1)
            bar.set_postfix(resolved=sum(t.resolved for t in results.trials))

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(pending))))))
    finally:
        bar.close()
    results.wall_seconds = wall_before + time.monotonic() - started
    results.save(out)
    return results


def _check_tasks_unchanged(results: RunResults, tasks: Sequence[Task]) -> None:
    hashes = {t.id: t.content_hash() for t in tasks}
    changed = sorted(
        {t.task_id for t in results.trials if t.task_id in hashes and t.task_hash != hashes[t.task_id]}
    )
    if changed:
        raise ConfigMismatch(
            f"cannot resume: tasks changed since their trials were recorded: {changed}. "
            "Use a new --out directory to evaluate the new versions."
        )


class _TrialRunner:
    """Runs one trial with one retry on infrastructure errors; builds each image once."""

    def __init__(self, policy: Any, out_dir: Path, timeout_scale: float) -> None:
        self.policy = policy
        self.out_dir = out_dir
        self.scale = timeout_scale
        self._images: dict[str, asyncio.Task] = {}

    async def run(self, task: Task, attempt: int) -> TrialResult:
        started = time.monotonic()
        errors: list[str] = []
        for _ in range(2):
            try:
                trial = await self._once(task, attempt)
                trial.infra_retries = len(errors)
                return trial
            except (InfraError, SandboxError, OSError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                self._images.pop(task.id, None)
            except Exception as exc:  # docker SDK errors and friends: infra, not the agent
                if not _is_infra(exc):
                    raise
                errors.append(f"{type(exc).__name__}: {exc}")
                self._images.pop(task.id, None)
        return TrialResult(
            task_id=task.id, attempt=attempt, resolved=False, score=0.0,
            failure_mode=FailureMode.infra_error, difficulty=task.difficulty.value,
            category=task.category, task_hash=task.content_hash(),
            total_seconds=time.monotonic() - started, infra_retries=len(errors) - 1,
            error=" | ".join(errors),
        )

    async def _image(self, task: Task) -> None:
        from tbrl_lib.sandbox import ensure_image

        if task.id not in self._images:
            self._images[task.id] = asyncio.ensure_future(ensure_image(task))
        await self._images[task.id]

    async def _once(self, task: Task, attempt: int) -> TrialResult:
        from tbrl_lib.agent import run_episode
        from tbrl_lib.agent.config import EpisodeLimits
        from tbrl_lib.rewards import verify
        from tbrl_lib.sandbox import open_sandbox

        start = time.monotonic()
        await self._image(task)
        agent_limit = task.limits.agent_timeout_sec * self.scale
        test_limit = task.limits.test_timeout_sec * self.scale
        limits = EpisodeLimits(time_limit_s=agent_limit)
        async with open_sandbox(task) as sandbox:
            agent_start = time.monotonic()
            trajectory, harness_timeout = None, False
            try:
                trajectory = await asyncio.wait_for(
                    run_episode(task, self.policy, sandbox, limits), agent_limit + GRACE_SECONDS
                )
            except asyncio.TimeoutError:
                harness_timeout = True
            agent_seconds = time.monotonic() - agent_start
            termination = _termination(trajectory) if trajectory else "agent_timeout"
            if TERMINATION_MODES.get(termination) == FailureMode.infra_error:
                raise InfraError(f"episode ended with {termination}")
            test_start = time.monotonic()
            try:
                report = await asyncio.wait_for(
                    verify(task, sandbox, timeout=test_limit), test_limit + GRACE_SECONDS
                )
            except asyncio.TimeoutError as exc:
                raise InfraError(
                    f"verifier did not return within {test_limit + GRACE_SECONDS:.0f}s"
                ) from exc
            test_seconds = time.monotonic() - test_start
        if getattr(report, "infra_error", None):
            raise InfraError(f"verifier infra error: {report.infra_error}")
        resolved = _resolved(report)
        tokens_in, tokens_out, turns = _usage(trajectory)
        return TrialResult(
            task_id=task.id, attempt=attempt, resolved=resolved, score=float(report.score),
            failure_mode=failure_mode(termination, resolved, bool(getattr(report, "timed_out", False))),
            difficulty=task.difficulty.value, category=task.category,
            task_hash=task.content_hash(), termination=termination,
            tokens_in=tokens_in, tokens_out=tokens_out, turns=turns,
            agent_seconds=agent_seconds, test_seconds=test_seconds,
            total_seconds=time.monotonic() - start,
            error="harness stopped the episode past its time limit" if harness_timeout else None,
            trajectory=self._save(trajectory, task, attempt),
        )

    def _save(self, trajectory: Any, task: Task, attempt: int) -> str | None:
        if trajectory is None:
            return None
        rel = Path("trajectories") / f"{task.id}.{attempt}.jsonl"
        (self.out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        trajectory.save_jsonl(self.out_dir / rel)
        return str(rel)


def _termination(trajectory: Any) -> str:
    value = trajectory.termination
    return getattr(value, "value", str(value))


def _resolved(report: Any) -> bool:
    resolved = getattr(report, "resolved", None)
    return bool(resolved) if resolved is not None else report.score >= 1.0 - 1e-9


def _usage(trajectory: Any) -> tuple[int, int, int]:
    if trajectory is None:
        return 0, 0, 0
    return (
        int(getattr(trajectory, "tokens_in", 0) or 0),
        int(getattr(trajectory, "tokens_out", 0) or 0),
        int(getattr(trajectory, "turns", 0) or 0),
    )


def _is_infra(exc: Exception) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("docker", "requests", "urllib3"))
