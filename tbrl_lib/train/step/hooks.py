"""The hooks a step's runner calls, one module: what varies by run, the runner never branches on.

`step_rollouts.StepRunner` names each hook it calls as a Protocol (`InfraHook`,
`RefillHook`, `Gather`, `OutageHook`), and the session (`grpo/session.py`) hands it these in
its `RunnerSettings`:

- the infra-rate stop, `InfraErrorGuard`, which may stop the run;
- dynamic sampling, `DynamicSampling`, which refills flat groups;
- the gather across processes, `gather_across`, with the processes it stands on
  (`process_state`, `rank_suffix`, and `require_same_on_every_process`, which every
  checkpoint runs over the runner's and the curriculum's state).

The engine-outage hook (`engine_outage.EngineWait`) has its own module: it talks to the
Docker engines and writes the line that resumes the run.

The infra-rate stop
-------------------
An infra error (sandbox, engine or model backend failed) never teaches the model anything:
the rollout is masked. A run where most rollouts are masked measures the machines, not the
model, so once at least `check_after` rollouts have run (a step's worth), more than
`max_rate` of them failing stops training with `InfraErrorRateExceeded` and the first
errors. The counts cover every process's rollouts (the runner gathers them), and they are
saved with each checkpoint, so a resumed run keeps counting. Left out: per-host rates.

Dynamic sampling
----------------
DAPO's: a flat group is replaced, in the same step, by another task's group. A group whose
rewards are all equal (every rollout solved, none, or the same partial credit) has zero
advantage everywhere and only dilutes the loss. `DynamicSampling.refill` drops such a group
and runs a group of another task in its place: the curriculum picks the tasks
(`Curriculum.refill_ids`: the least drawn active tasks outside the batch, easy first), up to
`rounds` rounds. A replacement that is flat too is kept out and the original stays, so the
batch keeps TRL's shape. Dropped groups are returned (saved with `dropped: true` and counted
by the curriculum like any other); the `sampling/…` metrics say what happened:

    sampling/zero_std_groups   share of flat groups before the refill
    sampling/zero_std_after    ... after it
    sampling/refilled_groups   groups replaced
    sampling/refill_rollouts   extra rollouts run for it

It needs each group whole in this process's slice (always true on one process); when a slice
splits a group it does nothing. Left out: refilling across processes (each rank picks its own
replacement tasks; the curriculum's counts are shared).

The processes
-------------
The training processes as accelerate sees them (one process without `accelerate launch`).
Every question a run asks about its processes goes through here: which one this is
(`process_state`, which `train()` asks first), what every process holds (`gather_across`),
and whether they still agree. accelerate comes with TRL and loads torch, so it is imported
when first asked.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tbrl_lib.tasks.model import Task
from tbrl_lib.train.step.curriculum import Curriculum, no_spread
from tbrl_lib.train.step.runner import StepRollout

# The infra-rate stop.


class InfraErrorRateExceeded(RuntimeError):
    """Too many rollouts were infrastructure errors: the run measures the machines, not the model."""


class InfraErrorGuard:
    """Counts rollouts and infra errors over the run; raises past `max_rate`."""

    def __init__(self, max_rate: float = 1.0, check_after: int = 1) -> None:
        self.max_rate, self.check_after = max_rate, check_after
        self.total = 0
        self.errors: list[str] = []
        """`task_id: error` of every infra error so far, in order."""

    def record(self, rows: list[dict[str, Any]]) -> None:
        """Count `rollout_row`s; raise `InfraErrorRateExceeded` when the rate is past the limit."""
        self.total += len(rows)
        self.errors += [f"{r['task_id']}: {r['error']}" for r in rows if r["infra_error"]]
        rate = len(self.errors) / self.total if self.total else 0.0
        if self.total >= self.check_after and rate > self.max_rate:
            first = "\n  ".join(self.errors[:5])
            raise InfraErrorRateExceeded(
                f"{len(self.errors)} of {self.total} rollouts ({rate:.0%}) were infrastructure "
                f"errors, above grpo.max_infra_error_rate={self.max_rate:g}; training stopped "
                f"(these rollouts teach nothing). First errors:\n  {first}"
            )


# Dynamic sampling.

RunAll = Callable[[list[Task]], Awaitable[list[StepRollout]]]
"""Runs one rollout per task, in order (`StepRunner.run_all`)."""


def flat_group(group: Sequence[StepRollout]) -> bool:
    """True when the scored rollouts of a group all have the same reward (zero advantage)."""
    scored = [r.reward for r in group if not r.infra_error and r.reward is not None]
    return len(scored) >= 2 and no_spread(scored)


class DynamicSampling:
    """Refills flat groups with groups of tasks the curriculum picks (see the module docstring)."""

    def __init__(
        self, curriculum: Curriculum, tasks: Sequence[Task], group_size: int, rounds: int = 1
    ) -> None:
        self.curriculum, self.group_size, self.rounds = curriculum, group_size, rounds
        self.tasks = {t.id: t for t in tasks}
        self.last_draws: list[str] = []
        """Tasks drawn in the latest refill (this process); every process's go to the
        curriculum's shared counts (`Curriculum.commit_refills`)."""

    async def refill(
        self, rollouts: list[StepRollout], run_all: RunAll
    ) -> tuple[list[StepRollout], list[StepRollout], dict[str, float]]:
        """(batch to train on, dropped rollouts, `sampling/...` metrics). A no-op when the
        groups are not whole in `rollouts`."""
        size = self.group_size
        self.last_draws = []
        groups = [rollouts[i : i + size] for i in range(0, len(rollouts), size)]
        whole = (
            size > 1
            and len(rollouts) % size == 0
            and all(len({r.task_id for r in g}) == 1 for g in groups)
        )
        if not whole:
            return rollouts, [], {}
        flat = [i for i, g in enumerate(groups) if flat_group(g)]
        stats = {
            "sampling/zero_std_groups": len(flat) / len(groups),
            "sampling/refilled_groups": 0.0,
            "sampling/refill_rollouts": 0.0,
        }
        set_aside: list[StepRollout] = []
        for _ in range(self.rounds):
            if not flat:
                break
            exclude = {g[0].task_id for g in groups}
            new_tasks = [self.tasks[t] for t in self.curriculum.refill_ids(len(flat), exclude)]
            if not new_tasks:
                break
            self.last_draws += [t.id for t in new_tasks]
            fresh = await run_all([t for t in new_tasks for _ in range(size)])
            stats["sampling/refill_rollouts"] += len(fresh)
            still_flat = flat[len(new_tasks) :]
            for index, start in zip(flat, range(0, len(fresh), size), strict=False):
                group = fresh[start : start + size]
                if flat_group(group):
                    set_aside += group
                    still_flat.append(index)
                else:
                    set_aside += groups[index]
                    groups[index] = group
                    stats["sampling/refilled_groups"] += 1
            flat = sorted(still_flat)
        for r in set_aside:
            r.dropped = True
        stats["sampling/zero_std_after"] = len(flat) / len(groups)
        return [r for g in groups for r in g], set_aside, stats


# The processes.


def process_state(cpu: bool = False):
    """accelerate's view of this process; under `accelerate launch` creating it joins the
    process group TRL's trainer then uses. The first call decides: `cpu` (the run trains on
    CPU) makes several processes one gloo group from the start, as TRL's `use_cpu` trainer
    would make them only once it exists (before it, each would take itself for process 0)."""
    from accelerate import PartialState  # loads torch: only when a run asks

    return PartialState(cpu=cpu)


def gather_across(obj: Any) -> list[Any]:
    """`obj` of every process, in rank order (one process: `[obj]`)."""
    if process_state().num_processes == 1:
        return [obj]
    from accelerate.utils import gather_object  # as PartialState

    return gather_object([obj])


def rank_suffix() -> str:
    """`-rank<i>` when several processes train (each writes its own files), else ''."""
    state = process_state()
    return f"-rank{state.process_index}" if state.num_processes > 1 else ""


def require_same_on_every_process(parts: dict[str, Any], step: int) -> None:
    """Stop the run when a process's curriculum, sampler or runner state differs from
    process 0's: they would sample different tasks from then on (one process: nothing)."""
    texts = gather_across(json.dumps(parts, sort_keys=True, default=str))
    first = json.loads(texts[0])
    for rank, text in enumerate(texts):
        differ = [k for k, v in json.loads(text).items() if first.get(k) != v]
        if differ:
            raise RuntimeError(
                f"at step {step} process {rank}'s {', '.join(differ)} state differs from "
                "process 0's: the processes desynced (a decision was taken from one process's "
                "rollouts); this is a bug in tbrl's gathering"
            )
