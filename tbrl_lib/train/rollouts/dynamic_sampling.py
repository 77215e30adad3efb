"""DAPO's dynamic sampling: a flat group is replaced, in the same step, by another task's group.

A group whose rewards are all equal (every rollout solved, none, or the same partial credit)
has zero advantage everywhere and only dilutes the loss. `DynamicSampling.refill` drops such
a group and runs a group of another task in its place: the curriculum picks the tasks
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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from tbrl_lib.tasks.model import Task
from tbrl_lib.train.rollouts.curriculum import Curriculum, no_spread
from tbrl_lib.train.rollouts.step_rollouts import Rollout

RunAll = Callable[[list[Task]], Awaitable[list[Rollout]]]
"""Runs one rollout per task, in order (`RolloutRunner.run_all`)."""


def flat_group(group: Sequence[Rollout]) -> bool:
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
        self, rollouts: list[Rollout], run_all: RunAll
    ) -> tuple[list[Rollout], list[Rollout], dict[str, float]]:
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
        set_aside: list[Rollout] = []
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
