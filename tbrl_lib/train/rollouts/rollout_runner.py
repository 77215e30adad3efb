"""`RolloutRunner`: one step's rollouts, from tasks to the records training learns from.

Everything below the trainer's interface lives here, so any producer of rollouts (TRL's
synchronous `rollout_func`, `trl_rollouts.RolloutFunc`; an asynchronous worker) shares it:

1. every task is one `tbrl_lib.rollout.run_rollout` (sandbox, episode, verifier + judge, the
   mission's reward: the one rollout evaluation and validation run), by `policy`, all on one
   asyncio loop, `concurrency` at a time;
2. when rollouts come back as infra errors and an engine stopped answering, the run waits for
   it, bounded, and reruns them once it is back, or stops resumably (`engine_outage.py`);
3. a rollout that produced no tokens is given a stub (the task's first prompt and one masked
   EOS: TRL needs a completion token per row), and every infra-error rollout gets an
   all-zero env mask, so what is saved is what training sees;
4. dynamic sampling refills flat groups (`dynamic_sampling.py`);
5. the step's rollouts are saved (`step-…-call-…[-rank<i>].jsonl`), a small row per rollout
   is gathered from every process (`processes.gather_across`), and from those rows alone,
   identical on every process, the infra-rate stop (`infra_guard.py`) counts and may stop the
   run, the curriculum counts each group, and the step's metrics are made.

`step` is `generate` (1-4) then `record` (5). The asynchronous worker (`async_rollouts.py`)
runs 1-3 per episode through `run_all`, in its own thread; its pipeline does dynamic sampling
at take time and calls `record` in the trainer's thread (`async_pipeline.py`).

Infra errors never teach the model it failed (masked), and any other exception from a
rollout is a bug that stops training: never masked. Left out: the TRL output format
(`trl_rollouts.py`), the order tasks come in (the curriculum's sampler).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from tbrl_lib.aio import run_sync
from tbrl_lib.policies.base import Policy
from tbrl_lib.rollout import RolloutConfig, RolloutResult, run_rollout
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.plan.processes import gather_across, rank_suffix
from tbrl_lib.train.rollouts.curriculum import Curriculum
from tbrl_lib.train.rollouts.dynamic_sampling import DynamicSampling, combine_sampling
from tbrl_lib.train.rollouts.engine_outage import WHO, EngineWait
from tbrl_lib.train.rollouts.infra_guard import InfraErrorGuard
from tbrl_lib.train.rollouts.rollout_records import (
    Rollout,
    metrics_of_rows,
    rollout_row,
    save_rollouts,
)

RolloutFn = Callable[[Task, Policy, RolloutConfig, Any], Awaitable[RolloutResult]]
"""`run_rollout`'s shape: `async (task, policy, config, judge) -> RolloutResult`."""

OUTAGE_RERUNS = 2
"""Most reruns of a step's rollouts that engine outages failed (an engine that keeps
restarting: what still fails stays an infra error, masked)."""


@dataclass
class Generated:
    """One step's rollouts before they are saved and counted (`RolloutRunner.generate`)."""

    rollouts: list[Rollout]
    """The batch to train on, one per task asked for, in order (refilled groups in place)."""
    dropped: list[Rollout]
    """Flat groups dynamic sampling set aside (saved and counted, not trained on)."""
    sampling: dict[str, float]
    """This process's `sampling/...` numbers."""
    draws: list[str]
    """Tasks the refill drew (the curriculum's shared counts take them in `record`)."""


@dataclass
class StepRollouts:
    """What one step's rollouts give the trainer."""

    rollouts: list[Rollout]
    """The batch to train on, one per task asked for, in order (refilled groups in place)."""
    metrics: dict[str, float]
    """`rollout/`, `reward/`, `judge/`, `sandbox/`, `sampling/` numbers over every process."""


class RolloutRunner:
    """Runs, refills, saves and counts one step's rollouts (see the module docstring)."""

    def __init__(
        self,
        policy: Policy,
        rollout: RolloutConfig,
        judge: Any | None,
        curriculum: Curriculum,
        *,
        concurrency: int,
        stub_prompt_ids: Callable[[Task], list[int]],
        eos_id: int,
        sampling: DynamicSampling | None = None,
        infra: InfraErrorGuard | None = None,
        outage: EngineWait | None = None,
        trajectories_dir: Path | None = None,
        progress: bool = True,
        rollout_fn: RolloutFn = run_rollout,
    ) -> None:
        self.policy, self.rollout, self.judge = policy, rollout, judge
        self.curriculum, self.sampling = curriculum, sampling
        self.infra = infra or InfraErrorGuard()
        self.outage = outage
        self.concurrency, self.progress = concurrency, progress
        self.stub_prompt_ids, self.eos_id = stub_prompt_ids, eos_id
        self.trajectories_dir = trajectories_dir
        self.rollout_fn = rollout_fn
        self.calls = 0
        """Steps run so far (names the trajectory files; a resumed run continues it)."""

    def step(self, tasks: list[Task], step: int | None = None) -> StepRollouts:
        """One rollout per task (TRL repeats each task `num_generations` times in a row)."""
        return self.record(self.generate(tasks), step)

    def generate(self, tasks: list[Task]) -> Generated:
        """The rollouts of `tasks` by the runner's policy, refilled; nothing is saved or
        counted yet (`record`)."""
        rollouts = run_sync(self.run_all(tasks))
        dropped, sampling, draws = [], {}, []
        if self.sampling is not None:
            rollouts, dropped, sampling = run_sync(self.sampling.refill(rollouts, self.run_all))
            draws = list(self.sampling.last_draws)
        return Generated(rollouts, dropped, sampling, draws)

    def record(self, generated: Generated, step: int | None = None) -> StepRollouts:
        """Save `generated`, count it (infra stop, curriculum) and make the step's metrics."""
        rollouts, dropped = generated.rollouts, generated.dropped
        self.calls += 1
        if self.trajectories_dir is not None:
            name = f"step-{self.calls if step is None else step:05d}-call-{self.calls:04d}"
            save_rollouts(
                rollouts + dropped, self.trajectories_dir / f"{name}{rank_suffix()}.jsonl"
            )
        # Every decision below uses all processes' rollouts, so every process takes the same one.
        reports = gather_across(
            {
                "kept": [rollout_row(r) for r in rollouts],
                "dropped": [rollout_row(r) for r in dropped],
                "sampling": generated.sampling,
                "draws": generated.draws,
            }
        )
        kept = [row for report in reports for row in report["kept"]]
        seen = [row for report in reports for row in report["kept"] + report["dropped"]]
        self.infra.record(seen)
        self.curriculum.record_rollouts(
            [r["task_id"] for r in seen], [r["reward"] for r in seen], [r["solved"] for r in seen]
        )
        self.curriculum.commit_refills([t for report in reports for t in report["draws"]])
        metrics = {**metrics_of_rows(kept), **combine_sampling([r["sampling"] for r in reports])}
        return StepRollouts(rollouts, metrics)

    async def run_all(
        self, tasks: list[Task], policy: Policy | None = None, progress: bool | None = None
    ) -> list[Rollout]:
        """One rollout per task by `policy` (default: the runner's), in order, `concurrency`
        at a time; those an engine outage failed are rerun once the engine is back (up to
        `OUTAGE_RERUNS` times). `progress`: a bar (default: the runner's setting)."""
        rollouts = await self.run_each(tasks, policy, progress)
        for attempt in range(OUTAGE_RERUNS + 1):
            failed = [i for i, r in enumerate(rollouts) if r.infra_error]
            if not failed or self.outage is None:
                break
            why = rollouts[failed[0]].error or "an infra error"
            if not await self.outage.after_infra_errors(why):
                break  # every engine answers: these infra errors were no outage
            if attempt == OUTAGE_RERUNS:
                break
            tqdm.write(f"{WHO}: rerunning the {len(failed)} rollouts the outage failed")
            again = await self.run_each([tasks[i] for i in failed], policy, progress)
            for i, rollout in zip(failed, again, strict=True):
                rollouts[i] = rollout
        return rollouts

    async def run_each(
        self, tasks: list[Task], policy: Policy | None = None, progress: bool | None = None
    ) -> list[Rollout]:
        """One rollout per task, in order, `concurrency` at a time (no outage handling)."""
        policy = policy or self.policy
        limit = asyncio.Semaphore(self.concurrency)
        shown = self.progress if progress is None else progress
        bar = tqdm(total=len(tasks), desc="rollouts", disable=not shown, leave=False)

        async def one(task: Task) -> Rollout:
            async with limit:
                try:
                    result = await self.rollout_fn(task, policy, self.rollout, self.judge)
                finally:
                    bar.update(1)
            rollout = Rollout.from_result(result)
            if rollout.infra_error and not (rollout.prompt_ids and rollout.completion_ids):
                rollout.prompt_ids, rollout.completion_ids = self.stub_ids(task)
                rollout.logprobs = None
            if rollout.infra_error:  # what is saved is what training sees: no loss tokens
                rollout.env_mask = [0] * len(rollout.completion_ids)
            return rollout

        try:
            return list(await asyncio.gather(*(one(t) for t in tasks)))
        finally:
            bar.close()

    def stub_ids(self, task: Task) -> tuple[list[int], list[int]]:
        """Prompt and completion of a rollout that produced no tokens: the task's prompt and
        one masked EOS (TRL needs at least one completion token per row)."""
        return list(self.stub_prompt_ids(task)), [self.eos_id]

    def state_dict(self) -> dict[str, Any]:
        """Counters a resumed run continues (trajectory file names, the infra error rate)."""
        return {"calls": self.calls, "total": self.infra.total, "infra_errors": self.infra.errors}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls, self.infra.total = state["calls"], state["total"]
        self.infra.errors = list(state["infra_errors"])
