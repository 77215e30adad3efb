"""Task validation: does a task teach anything, and can it be solved?

Validation is an evaluation with two policies, through the one rollout
(`tbrl_lib.rollout.run_rollout`) training and evaluation use. For each task:

1. **build** the image (`SandboxBackend.prepare`, content-hash cached);
2. **nop**: a rollout of the `noop` policy (no action at all), then the tests; the score must
   be at most `max_nop_score` (0.2) — a task the do-nothing agent passes teaches nothing;
3. **solution**: a rollout of the `oracle` policy, which acts the reference
   `solution/solve.sh` out through the agent's tools, then the tests; the score must be 1.0
   — so the task is solvable by an agent with exactly the tools the model has;
4. **stability**: the tests run `repeats - 1` more times on that same solved container
   (`RolloutConfig.verify_repeats`); every run must give the same per-test outcomes.

The verdict is `pass`, `fail` (the task is at fault: no solution, an image that does not
build here - `SandboxError.task_fault`, the failing step and its error lines in the reason -,
a solve failure, scores out of range, flaky tests) or `error` (the Docker engine, the network
during a build or a container failed, so nothing is known about the task). Every verdict carries its reasons. Tasks run concurrently
under an asyncio semaphore; timings are kept per phase.

    results = validate_tasks(tasks, concurrency=4)            # from sync code
    results = await validate_tasks_async(tasks, concurrency=4)  # inside an event loop

Takes any `Task` objects (bundled, converted or generated). No judge runs (the verdict is
about the tests). Left out: running the tests more than once on the untouched environment
(the nop score is checked once), and retrying a task whose infrastructure failed (it is
reported as `error`).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rich.markup import escape
from rich.table import Table
from tqdm.auto import tqdm

from tbrl_lib.agent.scripted import SOLUTION_PATH, NoopPolicy, OraclePolicy
from tbrl_lib.aio import blocking
from tbrl_lib.rewards import RewardConfig
from tbrl_lib.rollout import RolloutConfig, run_rollout
from tbrl_lib.sandbox import SandboxConfig, SandboxError, backend_for
from tbrl_lib.tasks.model import Task

SCORE_EPS = 1e-9
NO_SOLUTION = "no reference solution"
BUILD_FAILED = "image build failed"


class Verdict(str, Enum):
    passed = "pass"
    failed = "fail"
    error = "error"


class ValidationConfig(BaseModel):
    """How strict validation is and how it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_nop_score: float = Field(default=0.2, ge=0, le=1)
    """Highest score the untouched environment may get (0.2: a do-nothing agent must fail)."""
    repeats: int = Field(default=3, ge=1, le=20)
    """Test runs on the solved container; all must agree test by test."""
    solution_timeout_s: float | None = Field(default=None, gt=0)
    """Limit for solve.sh; None = the task's agent timeout."""
    test_timeout_s: float | None = Field(default=None, gt=0)
    """Limit per test run; None = the task's test timeout."""
    run_id: str = "validate"
    """Label `tbrl.run` on every container validation starts."""
    start_timeout_s: float = Field(default=300.0, gt=0)
    """Container start limit. Generous: validation is not latency-bound, and a loaded
    machine (or the sandbox's first-use reap of leftovers) can take minutes."""


@dataclass
class ValidationResult:
    """One task's verdict, the scores behind it, and where the time went."""

    task_id: str
    difficulty: str
    category: str
    verdict: Verdict = Verdict.passed
    reasons: list[str] = field(default_factory=list)
    nop_score: float | None = None
    solution_scores: list[float] = field(default_factory=list)
    """One score per test run on the solved container (first = the solution score)."""
    stable: bool | None = None
    failing_after_solution: list[str] = field(default_factory=list)
    passing_on_nop: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: build, nop, solve, tests (mean per run), total."""
    build_error: str | None = None
    """The whole build failure (the reason holds its first line): the end of the failing
    step's output."""

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.passed

    @property
    def task_defect(self) -> bool:
        """The task's own image does not build here."""
        return self.build_error is not None

    @property
    def solution_score(self) -> float | None:
        return self.solution_scores[0] if self.solution_scores else None

    def fail(self, reason: str) -> None:
        self.reasons.append(reason)
        if self.verdict is Verdict.passed:
            self.verdict = Verdict.failed

    def infra(self, reason: str) -> None:
        self.reasons.append(reason)
        self.verdict = Verdict.error

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdict"] = self.verdict.value
        return out


async def validate_task(task: Task, config: ValidationConfig | None = None) -> ValidationResult:
    """Build, nop, solve, repeat: one task's full check (see module docstring)."""
    config = config or ValidationConfig()
    result = ValidationResult(task.id, task.difficulty.value, task.category)
    started = time.monotonic()
    try:
        if not task.solution or not task.solution.strip():
            result.fail(f"{NO_SOLUTION} (solution/solve.sh): cannot show the task is solvable")
        phase = time.monotonic()
        try:
            await backend_for().prepare(task)
        except SandboxError as err:
            if err.task_fault:
                result.build_error = str(err)
                first = str(err).splitlines()[0].removeprefix(f"task {task.id}: ")
                result.fail(f"{BUILD_FAILED}: {_short(first)}")
            elif err.infra:
                result.infra(f"image: {_short(str(err).splitlines()[0])}")
            else:
                raise
            return result
        finally:
            result.timings["build"] = time.monotonic() - phase
        await _nop_phase(task, config, result)
        if task.solution and task.solution.strip() and result.verdict is not Verdict.error:
            await _solution_phase(task, config, result)
    finally:
        result.timings["total"] = time.monotonic() - started
    return result


def _rollout_config(config: ValidationConfig, repeats: int = 1):
    episode = {"max_turns": 50}
    if config.solution_timeout_s is not None:
        episode["time_limit_s"] = config.solution_timeout_s
    return RolloutConfig(
        episode=episode,
        reward=RewardConfig(weights={"tests": 1.0, "judge": 0.0}),
        sandbox=SandboxConfig(run_id=config.run_id, start_timeout_s=config.start_timeout_s),
        verify_timeout_s=config.test_timeout_s,
        verify_repeats=repeats,
    )


async def _nop_phase(task: Task, config: ValidationConfig, result: ValidationResult) -> None:
    phase = time.monotonic()
    rollout = await run_rollout(task, NoopPolicy(), _rollout_config(config))
    result.timings["nop"] = time.monotonic() - phase
    if rollout.infra_error:
        result.infra(f"the untouched environment could not be tested: {rollout.infra_error}")
        return
    report = rollout.tests
    result.nop_score = report.score
    result.passing_on_nop = sorted(name for name, ok in report.outcomes.items() if ok)
    if report.score > config.max_nop_score + SCORE_EPS:
        result.fail(
            f"untouched environment scores {report.score:.2f} > {config.max_nop_score:.2f} "
            f"(tests passing without any work: {', '.join(result.passing_on_nop)}); "
            "make those tests check what the agent must produce"
        )


async def _solution_phase(task: Task, config: ValidationConfig, result: ValidationResult) -> None:
    rollout = await run_rollout(task, OraclePolicy(), _rollout_config(config, config.repeats))
    result.timings["solve"] = rollout.timings.get("episode", 0.0)
    result.timings["tests"] = rollout.timings.get("scoring", 0.0) / config.repeats
    if rollout.infra_error:
        result.infra(f"the reference solution could not be run or tested: {rollout.infra_error}")
        return
    if rollout.termination != "finished":
        message = rollout.trajectory.termination_message if rollout.trajectory else ""
        result.fail(
            f"acting out solve.sh did not finish ({rollout.termination}): {_short(message)}"
        )
    solve = _solve_outcome(rollout.trajectory)
    if solve:
        result.fail(solve)
    reports = [rollout.tests, *rollout.retests]
    result.solution_scores = [r.score for r in reports]
    first = reports[0]
    result.failing_after_solution = sorted(name for name, ok in first.outcomes.items() if not ok)
    result.failing_after_solution += sorted(set(first.missing) - set(result.failing_after_solution))
    if first.score < 1.0 - SCORE_EPS:
        detail = (
            f" (failing: {', '.join(result.failing_after_solution)})"
            if result.failing_after_solution
            else ""
        )
        note = f"; {first.error}" if first.error else ""
        result.fail(f"reference solution scores {first.score:.2f}, not 1.0{detail}{note}")
    outcomes = [r.outcomes for r in reports]
    result.stable = all(o == outcomes[0] for o in outcomes)
    if not result.stable:
        flaky = sorted(
            {name for o in outcomes for name in o if len({x.get(name) for x in outcomes}) > 1}
        )
        result.fail(
            f"flaky: test outcomes differ across {config.repeats} runs ({', '.join(flaky)})"
        )


def _solve_outcome(trajectory) -> str | None:
    """Why the oracle's run of solve.sh failed (exit code, time limit), read from its bash
    tool result; None when it succeeded."""
    for turn in trajectory.turns if trajectory else []:
        for call in turn.calls:
            if call.kind != "bash" or SOLUTION_PATH not in str(
                ((call.action or {}).get("fields") or {}).get("cmd", "")
            ):
                continue
            if "[timed out after" in call.output:
                return f"solve.sh did not finish within its time limit: {_short(call.output)}"
            code = re.search(r"\[exit code (\d+)\]", call.output)
            if code:
                return f"solve.sh exited {code.group(1)}: {_short(call.output)}"
    return None


def _short(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


async def validate_tasks_async(
    tasks: Sequence[Task],
    concurrency: int = 4,
    config: ValidationConfig | None = None,
    progress: bool = True,
    on_result: Callable[[ValidationResult], None] | None = None,
) -> list[ValidationResult]:
    """Validate `tasks`, at most `concurrency` at once; results in the input order.
    `validate_tasks` is its synchronous twin (also inside a notebook's loop)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    ids = [t.id for t in tasks]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(
            f"duplicate task ids {dupes}: give every task a unique id before validating"
        )
    config = config or ValidationConfig()
    gate = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(tasks), desc="validate", unit="task", disable=not progress)

    async def one(task: Task) -> ValidationResult:
        async with gate:
            result = await validate_task(task, config)
        bar.update(1)
        bar.set_postfix_str(f"{task.id}: {result.verdict.value}")
        if on_result:
            on_result(result)
        return result

    try:
        return list(await asyncio.gather(*(one(t) for t in tasks)))
    finally:
        bar.close()


validate_tasks = blocking(validate_tasks_async)


def validation_table(results: Sequence[ValidationResult]):
    """A rich table: one row per task, reasons under failing rows, a totals caption."""

    def score(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    colours = {Verdict.passed: "green", Verdict.failed: "red", Verdict.error: "yellow"}
    table = _table(
        "task validation",
        "task difficulty nop> solution> stable^ build_s> test_s> total_s> verdict",
    )
    for r in results:
        stable = "-" if r.stable is None else ("yes" if r.stable else "NO")
        t = r.timings
        table.add_row(
            r.task_id,
            r.difficulty,
            score(r.nop_score),
            score(r.solution_score),
            stable,
            f"{t.get('build', 0):.1f}",
            f"{t.get('tests', 0):.1f}",
            f"{t.get('total', 0):.1f}",
            f"[{colours[r.verdict]}]{r.verdict.value}[/]",
        )
        for reason in r.reasons:
            table.add_row("", "", "", "", "", "", "", "", f"[dim]{reason}[/]")
    passed = sum(r.ok for r in results)
    table.caption = f"{passed}/{len(results)} pass"
    return table


def check_table(skipped: Sequence[Any], results: Sequence[ValidationResult]):
    """`tbrl tasks check`: one row per task found, loadable or not: loads / builds / no-op
    score / oracle score / what went wrong. A task without a solution is not a failure here
    (the oracle column says so)."""
    table = _table("task compatibility", "task loads^ builds^ no-op> oracle> result")
    for err in skipped:
        where = getattr(err, "location", "?")
        table.add_row(escape(str(where)), "[red]no[/]", "-", "-", "-", escape(str(err)))
    for r in results:
        problems = [x for x in r.reasons if not x.startswith(NO_SOLUTION)]
        oracle = (
            "no solution"
            if any(x.startswith(NO_SOLUTION) for x in r.reasons)
            else ("-" if r.solution_score is None else f"{r.solution_score:.2f}")
        )
        if r.verdict is Verdict.error:
            verdict = "[yellow]infra error: " + escape("; ".join(r.reasons)) + "[/]"
        elif r.task_defect:
            verdict = "[red]task defect: " + escape("; ".join(problems)) + "[/]"
        else:
            verdict = "[red]" + escape("; ".join(problems)) + "[/]" if problems else "[green]ok[/]"
        unknown = r.verdict is Verdict.error and any(x.startswith("image:") for x in r.reasons)
        table.add_row(
            escape(r.task_id),
            "yes",
            "[red]no[/]" if r.task_defect else ("-" if unknown else "yes"),
            "-" if r.nop_score is None else f"{r.nop_score:.2f}",
            oracle,
            verdict,
        )
    ok = sum(
        1
        for r in results
        if r.verdict is not Verdict.error
        and not [x for x in r.reasons if not x.startswith(NO_SOLUTION)]
    )
    defects = sum(r.task_defect for r in results)
    infra = sum(r.verdict is Verdict.error for r in results)
    table.caption = (
        f"{ok}/{len(skipped) + len(results)} ok; {len(skipped)} do not load, {defects} do not "
        f"build (the task's own defect), {infra} infra error(s)"
    )
    return table


def check_ok(skipped: Sequence[Any], results: Sequence[ValidationResult]) -> bool:
    """Everything loaded, built and behaved (a missing reference solution is allowed)."""
    return not skipped and all(
        r.verdict is not Verdict.error and all(x.startswith(NO_SOLUTION) for x in r.reasons)
        for r in results
    )


JUSTIFY = {">": "right", "^": "center"}


def _table(title: str, columns: str) -> Table:
    """A rich table with `columns` given as words: `name>` right-aligned, `name^` centred,
    else left; `_` in a name is a space."""
    table = Table(title=title)
    for word in columns.split():
        name, justify = word.rstrip(">^"), JUSTIFY.get(word[-1], "left")
        table.add_column(name.replace("_", " "), justify=justify)
    return table
