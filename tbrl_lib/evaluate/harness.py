"""The benchmark harness: every task K times, each in a fresh sandbox, scored like training.

`run_eval(tasks, RunConfig, out_dir)` is the one entry point (the CLI, notebook 05 and
task validation call it). A trial is one `tbrl_lib.rollout.run_rollout` - the rollout
training uses: build the task's image (once per task), open a fresh sandbox, run the
episode with the task's own agent timeout, then the verifier (task's test timeout) and the
judge (`RunConfig.reward.judge`, the offline rule judge by default) -> one `TrialResult` with the
test score, the judge score and the reward. Terminal-Bench forbids changing the timeouts;
`timeout_scale` multiplies both and the summary then says the numbers are not comparable.

Infrastructure failures (the engine, a build that lost the network or ran out of time, a
verifier that could not run) are retried once and then recorded as `infra_error`, never as an
agent failure. A task whose own image does not build here (a failing Dockerfile step, a base
image the engine cannot provide) is recorded as `task_error` with the build's reason, once per
task (its other trials reuse the verdict instead of rebuilding), and never retried.
After an infra error the engine is pinged: one that stopped answering (a restart) is waited
for, with a message, before the retry (`engine_wait_s`); if it does not come back the run
stops with `EngineOutage` (finished trials are saved; rerunning resumes). Any other
exception is a bug and stops the run.

`results.json` is rewritten atomically after every trial, so killing the process at any
moment loses at most the trials in flight; running the same command again resumes.

Left out: sharding a run over machines (run several harnesses on disjoint task lists and
merge their trials).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.aio import blocking
from tbrl_lib.evaluate.results import (
    ConfigMismatch,
    FailureMode,
    RunConfig,
    RunResults,
    TrialResult,
)
from tbrl_lib.models import make_policy
from tbrl_lib.rewards import judge_for
from tbrl_lib.rollout import AGENT_TIMEOUT, RolloutConfig, RolloutResult, run_rollout
from tbrl_lib.sandbox import backend_for, reap_run
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.tasks.model import Task

TERMINATION_MODES: dict[str, FailureMode] = {
    "time_limit": FailureMode.agent_timeout,
    AGENT_TIMEOUT: FailureMode.agent_timeout,
    "parse_error_streak": FailureMode.parse_error,
    "no_action": FailureMode.no_action,
    "context_overflow": FailureMode.context_overflow,
    "token_budget": FailureMode.context_overflow,
    "infra_error": FailureMode.infra_error,
    "storage_limit": FailureMode.storage_limit,
}
"""`Termination` value -> failure mode. `token_budget` (the conversation reached the
episode's token limit) counts as a context overflow; `finished`, `max_turns`,
`resource_limit` and `sandbox_broken` are `unresolved` when the tests fail. `agent_timeout`
is the rollout's own stop, for an episode that overran its limit by the grace period."""


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


@dataclass(frozen=True)
class OutageWording:
    """Who speaks while an engine outage is waited out, and what the stop says to do after
    it (`SandboxBackend.wait`'s `who` and `resume`): evaluation's own by default; a caller
    that runs the evaluation inside something else (training) gives its own."""

    who: str = "tbrl eval"
    resume: str = "finished trials are saved: start the engine and rerun the same command to resume"


EVAL_WORDING = OutageWording()


async def run_eval_async(
    tasks: Sequence[Task],
    config: RunConfig,
    out_dir: str | Path,
    *,
    progress: bool = True,
    policy: Any | None = None,
    engine_wait_s: float = 300.0,
    outage: OutageWording = EVAL_WORDING,
) -> RunResults:
    """Run (or resume) an evaluation; returns the finished `RunResults` (also on disk).
    `policy` overrides `make_policy(config.policy)` (an object already built, e.g. the
    trainer's); `config.policy` still names it in the results. `run_eval` is its
    synchronous twin (the CLI, scripts)."""
    policy = policy or make_policy(
        config.policy
    )  # a bad spec fails here, before anything is written
    require_credentials(policy)
    judge = judge_for(config.reward)
    selected = list(tasks)[: config.limit] if config.limit else list(tasks)
    if not selected:
        raise ValueError(f"no tasks to evaluate in {config.tasks_source!r}")
    if config.policy == "oracle":
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
        for attempt in range(config.attempts)
        for task in selected
        if (task.id, attempt) not in done
    ]
    runner = TrialRunner(
        policy,
        judge,
        config.rollout_config(run_id=f"eval-{out.resolve().name}"),
        out,
        engine_wait_s,
        outage,
    )
    wall_before, started = results.wall_seconds, time.monotonic()
    total = len(selected) * config.attempts
    bar = tqdm(
        total=total,
        initial=total - len(pending),
        desc=f"eval {config.policy}",
        unit="trial",
        disable=not progress,
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
        await asyncio.gather(
            *(worker() for _ in range(max(1, min(config.concurrency, len(pending)))))
        )
    finally:
        bar.close()
        results.wall_seconds = wall_before + time.monotonic() - started
        results.save(out)
        for line in await asyncio.to_thread(reap_run, runner.rollout.sandbox):
            tqdm.write(line)
    return results


run_eval = blocking(run_eval_async)


def require_credentials(policy: Any) -> None:
    """Refuse, before any trial runs, a policy that cannot be called here (an
    `anthropic:MODEL` policy without `ANTHROPIC_API_KEY`): otherwise every trial would fail
    on its first model call. An OpenAI-compatible endpoint named by its URL may need no key."""
    why = policy.unavailable() if hasattr(policy, "unavailable") else None
    if why:
        raise ValueError(why)


def _check_tasks_unchanged(results: RunResults, tasks: Sequence[Task]) -> None:
    hashes = {t.id: t.content_hash() for t in tasks}
    changed = sorted(
        {
            t.task_id
            for t in results.trials
            if t.task_id in hashes and t.task_hash != hashes[t.task_id]
        }
    )
    if changed:
        raise ConfigMismatch(
            f"cannot resume: tasks changed since their trials were recorded: {changed}. "
            "Use a new --out directory to evaluate the new versions."
        )


class TrialRunner:
    """Runs one trial: a rollout, retried once on infrastructure errors, after waiting out an
    engine outage (bounded)."""

    def __init__(
        self,
        policy: Any,
        judge: Any | None,
        rollout: RolloutConfig,
        out_dir: Path,
        engine_wait_s: float = 300.0,
        outage: OutageWording = EVAL_WORDING,
    ) -> None:
        self.policy, self.judge, self.rollout = policy, judge, rollout
        self.out_dir, self.engine_wait_s, self.outage = out_dir, engine_wait_s, outage
        self._defects: dict[str, str] = {}
        """Task content hash -> why its image does not build (asked once per task)."""
        self._build_locks: dict[str, asyncio.Lock] = {}

    async def run(self, task: Task, attempt: int) -> TrialResult:
        started = time.monotonic()
        errors: list[str] = []
        for _ in range(2):
            result = await self._build(task)
            if result is None:
                result = await run_rollout(task, self.policy, self.rollout, self.judge)
            if result.task_error is not None:
                return self._unscored(task, attempt, FailureMode.task_error, result.task_error)
            if result.infra_error is None:
                return self._trial(task, attempt, result, started, retries=len(errors))
            errors.append(result.infra_error)
            await self._wait_for_engine(result.infra_error)
        trial = self._unscored(task, attempt, FailureMode.infra_error, " | ".join(errors))
        trial.total_seconds, trial.infra_retries = time.monotonic() - started, len(errors) - 1
        return trial

    def _unscored(self, task: Task, attempt: int, mode: FailureMode, error: str) -> TrialResult:
        """A trial that says nothing about the agent (an infra error or the task's defect)."""
        return TrialResult(
            task_id=task.id,
            attempt=attempt,
            resolved=False,
            score=0.0,
            failure_mode=mode,
            difficulty=task.difficulty.value,
            category=task.category,
            task_hash=task.content_hash(),
            error=error,
        )

    async def _build(self, task: Task) -> RolloutResult | None:
        """Build the image first, under the task's own build limit (concurrent trials of one
        task share one build); a failure is the trial's infra error or the task's defect (then
        remembered: the task's other trials do not build it again)."""
        key = task.content_hash()
        limit = task.limits.build_timeout_sec + self.rollout.grace_s
        async with self._build_locks.setdefault(key, asyncio.Lock()):
            if key in self._defects:
                return RolloutResult(task.id, None, task_error=self._defects[key])
            try:
                await asyncio.wait_for(backend_for(self.rollout.sandbox).prepare(task), limit)
            except TimeoutError:
                return RolloutResult(
                    task.id,
                    None,
                    infra_error=f"image build exceeded {limit:.0f}s",
                    infra_kind="build_timeout",
                )
            except SandboxError as err:
                if err.task_fault:
                    self._defects[key] = str(err)
                    return RolloutResult(task.id, None, task_error=self._defects[key])
                if not err.infra:
                    raise
                return RolloutResult(
                    task.id, None, infra_error=f"sandbox: {err.kind}: {err}", infra_kind=err.kind
                )
        return None

    async def _wait_for_engine(self, why: str) -> None:
        """Return at once while the engine answers; else wait for it (saying so), bounded."""
        await backend_for(self.rollout.sandbox).wait(
            why, self.engine_wait_s, who=self.outage.who, resume=self.outage.resume
        )

    def _trial(
        self, task: Task, attempt: int, result: RolloutResult, started: float, retries: int
    ) -> TrialResult:
        report, traj = result.tests, result.trajectory
        assert report is not None and result.reward is not None
        turns = traj.turns if traj is not None else []
        resolved = result.resolved
        judge = result.reward.scores.get("judge")
        return TrialResult(
            task_id=task.id,
            attempt=attempt,
            resolved=resolved,
            score=float(report.score),
            reward=result.reward.total,
            judge_score=judge,
            failed_tests=sorted(
                [n for n, ok in report.outcomes.items() if not ok] + report.missing
            ),
            failure_mode=failure_mode(result.termination, resolved, report.timed_out),
            difficulty=task.difficulty.value,
            category=task.category,
            task_hash=task.content_hash(),
            termination=result.termination,
            tokens_in=sum(t.prompt_tokens for t in turns),
            tokens_out=sum(t.completion_tokens for t in turns),
            turns=len(turns),
            agent_seconds=result.timings.get("episode", 0.0),
            test_seconds=result.timings.get("scoring", 0.0),
            total_seconds=time.monotonic() - started,
            infra_retries=retries,
            error="the rollout stopped the episode past its time limit"
            if result.termination == AGENT_TIMEOUT
            else None,
            trajectory=self._save(result, task, attempt),
        )

    def _save(self, result: RolloutResult, task: Task, attempt: int) -> str | None:
        if result.trajectory is None or result.termination == AGENT_TIMEOUT:
            return None
        rel = Path("trajectories") / f"{task.safe_id}.{attempt}.jsonl"
        Trajectory.save_jsonl(result.trajectory, self.out_dir / rel)
        return str(rel)
