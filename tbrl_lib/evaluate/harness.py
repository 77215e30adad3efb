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

from tbrl_lib.aio import run_sync
from tbrl_lib.evaluate.results import (
    ConfigMismatch,
    FailureMode,
    RunConfig,
    RunResults,
    TrialResult,
)
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.tasks.model import Task

GRACE_SECONDS = 60.0
"""Extra time past a task's own limit before the harness itself stops a step."""

TERMINATION_MODES: dict[str, FailureMode] = {
    "time_limit": FailureMode.agent_timeout,
    "agent_timeout": FailureMode.agent_timeout,
    "parse_error_streak": FailureMode.parse_error,
    "no_action": FailureMode.no_action,
    "context_overflow": FailureMode.context_overflow,
    "token_budget": FailureMode.context_overflow,
    "infra_error": FailureMode.infra_error,
}
"""`Termination` value -> failure mode. `token_budget` (the conversation reached the
episode's token limit) counts as a context overflow; `finished`, `max_turns` and `resource_limit` are
`unresolved` when the tests fail. `agent_timeout` is the harness's own stop, for an
episode that overran its limit by `GRACE_SECONDS`."""


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
    return run_sync(
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
    policy = make_policy(policy_spec)  # a bad spec fails here, before anything is written
    selected = list(tasks)[:limit] if limit else list(tasks)
    if not selected:
        raise ValueError(f"no tasks to evaluate in {config.tasks_source!r}")
    if policy_spec == "oracle":
        unsolved = [t.id for t in selected if not (t.solution or "").strip()]
        if unsolved:
            raise ValueError(
                f"the oracle replays reference solutions, and {len(unsolved)} task(s) have none: "
                f"{unsolved[:10]}{' ...' if len(unsolved) > 10 else ''}; evaluate them with another "
                "policy or add solution/solve.sh to each"
            )
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
    runner = _TrialRunner(policy, out, timeout_scale, run_id=f"eval-{out.resolve().name}")
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
    """Runs one trial, retrying once on infrastructure errors."""

    def __init__(self, policy: Any, out_dir: Path, timeout_scale: float, run_id: str) -> None:
        self.policy = policy
        self.out_dir = out_dir
        self.scale = timeout_scale
        self.run_id = run_id

    async def run(self, task: Task, attempt: int) -> TrialResult:
        started = time.monotonic()
        errors: list[str] = []
        for _ in range(2):
            try:
                trial = await self._once(task, attempt)
            except (InfraError, SandboxError, OSError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            except Exception as exc:  # docker SDK errors and friends: infra, not the agent
                if not _is_infra(exc):
                    raise
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            trial.infra_retries = len(errors)
            return trial
        return TrialResult(
            task_id=task.id, attempt=attempt, resolved=False, score=0.0,
            failure_mode=FailureMode.infra_error, difficulty=task.difficulty.value,
            category=task.category, task_hash=task.content_hash(),
            total_seconds=time.monotonic() - started, infra_retries=len(errors) - 1,
            error=" | ".join(errors),
        )

    async def _once(self, task: Task, attempt: int) -> TrialResult:
        from tbrl_lib.agent import EpisodeLimits, run_episode
        from tbrl_lib.rewards.verifier import verify
        from tbrl_lib.sandbox import SandboxConfig, ensure_image, open_sandbox

        start = time.monotonic()
        try:  # concurrent trials of one task share one build (ensure_image locks per image)
            await asyncio.wait_for(ensure_image(task), task.limits.build_timeout_sec + GRACE_SECONDS)
        except TimeoutError as exc:
            raise InfraError(f"image build exceeded {task.limits.build_timeout_sec:.0f}s") from exc
        agent_limit = task.limits.agent_timeout_sec * self.scale
        test_limit = task.limits.test_timeout_sec * self.scale
        sandbox_config = SandboxConfig(
            run_id=self.run_id, wall_clock_s=agent_limit + test_limit + 3 * GRACE_SECONDS
        )
        async with open_sandbox(task, sandbox_config) as sandbox:
            agent_start = time.monotonic()
            try:
                trajectory = await asyncio.wait_for(
                    run_episode(task, self.policy, sandbox, EpisodeLimits(time_limit_s=agent_limit)),
                    agent_limit + GRACE_SECONDS,
                )
            except TimeoutError:
                trajectory = None  # the episode overran its own limit; the tests still run
            agent_seconds = time.monotonic() - agent_start
            if trajectory is None:
                termination: str | None = "agent_timeout"
            else:
                termination = trajectory.termination.value if trajectory.termination else None
            if termination == "infra_error":
                raise InfraError(f"episode: {trajectory.termination_message}")
            test_start = time.monotonic()
            try:
                report = await asyncio.wait_for(
                    verify(task, sandbox, timeout=test_limit), test_limit + GRACE_SECONDS
                )
            except TimeoutError as exc:
                raise InfraError(
                    f"verifier did not return within {test_limit + GRACE_SECONDS:.0f}s"
                ) from exc
            test_seconds = time.monotonic() - test_start
        if report.infra_error:
            raise InfraError(f"verifier: {report.error}")
        resolved = _resolved(report)
        turns = trajectory.turns if trajectory else []
        return TrialResult(
            task_id=task.id, attempt=attempt, resolved=resolved, score=float(report.score),
            failed_tests=sorted([n for n, ok in report.outcomes.items() if not ok] + report.missing),
            failure_mode=failure_mode(termination, resolved, report.timed_out),
            difficulty=task.difficulty.value, category=task.category,
            task_hash=task.content_hash(), termination=termination,
            tokens_in=sum(t.prompt_tokens for t in turns),
            tokens_out=sum(t.completion_tokens for t in turns),
            turns=len(turns), agent_seconds=agent_seconds, test_seconds=test_seconds,
            total_seconds=time.monotonic() - start,
            error=None if trajectory else "the harness stopped the episode past its time limit",
            trajectory=self._save(trajectory, task, attempt),
        )

    def _save(self, trajectory: Any, task: Task, attempt: int) -> str | None:
        from tbrl_lib.agent import Trajectory

        if trajectory is None:
            return None
        rel = Path("trajectories") / f"{task.id}.{attempt}.jsonl"
        Trajectory.save_jsonl(trajectory, self.out_dir / rel)
        return str(rel)


def _resolved(report: Any) -> bool:
    """Terminal-Bench's notion: every test passed (a zero-weight failure still counts).
    Script-scored tasks (Harbor test.sh writing a reward) have no per-test outcomes: 1.0.
    A verifier that ran out of time never resolves a trial, whatever it recorded before."""
    if report.timed_out:
        return False
    if report.outcomes:
        return all(report.outcomes.values()) and not report.missing
    return report.score >= 1.0 - 1e-9


def _is_infra(exc: Exception) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("docker", "requests", "urllib3"))
