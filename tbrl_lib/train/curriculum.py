"""Curriculum and filtering: which tasks the next GRPO steps train on, and in what order.

GRPO learns only from groups whose rewards differ: a task every rollout solves, or none
does, gives zero advantage to all 16 rollouts and wastes their compute. So:

- `Curriculum.record_group(task_id, rewards)` keeps a running solve rate per task (a rollout
  counts as solved when its reward >= `solved_at`; infra-error rollouts, passed as None,
  are left out of every count);
- a task whose last `filter_after_groups` groups were all *always solved* (every reward >=
  solved_at) or all *never solved* (every reward <= 0) is skipped from then on;
- `order()` lists the active tasks easy -> hard by estimated solve rate: the measured rate
  when the task has been tried, else a prior from its declared difficulty.

`CurriculumSampler` feeds that order to TRL's dataloader in the layout TRL's own
`RepeatSampler` uses (each task index `num_generations` times in a row, the chunk repeated
for `steps_per_generation x num_iterations`), re-reading the curriculum before each chunk.
What is left out: un-skipping tasks (a skipped task stays skipped for the run) and
reweighting by learning progress.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from torch.utils.data import Sampler

DIFFICULTY_PRIOR = {"easy": 0.6, "medium": 0.4, "hard": 0.2, "extremely_hard": 0.1}
"""Solve rate assumed for a task not yet tried (ordering only)."""


@dataclass
class TaskRecord:
    rollouts: int = 0
    solved: int = 0
    groups: int = 0
    streak_kind: str | None = None
    """"always" or "never" when the latest groups were uninformative in the same way."""
    streak: int = 0
    skipped: str | None = None
    """Why the task is skipped ("always solved" / "never solved"), None while active."""

    @property
    def solve_rate(self) -> float | None:
        return self.solved / self.rollouts if self.rollouts else None


@dataclass
class Curriculum:
    difficulties: dict[str, str]
    """Task id -> declared difficulty, for every task the run may train on (in dataset order)."""
    filter_after_groups: int = 2
    """Skip a task after this many always/never-solved groups in a row; 0 disables skipping."""
    solved_at: float = 1.0
    """A rollout with reward >= this counts as solved."""
    records: dict[str, TaskRecord] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.difficulties:
            raise ValueError("Curriculum needs at least one task")
        self.records = {task_id: TaskRecord() for task_id in self.difficulties}

    def record_group(self, task_id: str, rewards: Sequence[float | None]) -> None:
        """Count one group of rollouts of `task_id` (None = infra error, not counted)."""
        if task_id not in self.records:
            raise KeyError(f"curriculum does not know task {task_id!r}")
        scored = [r for r in rewards if r is not None]
        if not scored:
            return
        record = self.records[task_id]
        solved = sum(r >= self.solved_at for r in scored)
        record.rollouts += len(scored)
        record.solved += solved
        record.groups += 1
        kind = "always" if solved == len(scored) else "never" if max(scored) <= 0 else None
        record.streak = (
            record.streak + 1 if kind and kind == record.streak_kind else (1 if kind else 0)
        )
        record.streak_kind = kind
        if (
            self.filter_after_groups
            and record.streak >= self.filter_after_groups
            and not record.skipped
        ):
            record.skipped = f"{kind} solved in {record.streak} groups in a row"

    def record_rollouts(self, task_ids: Sequence[str], rewards: Sequence[float | None]) -> None:
        """Group consecutive rollouts by task id (TRL keeps a group's rollouts together)."""
        groups: dict[str, list[float | None]] = {}
        for task_id, reward in zip(task_ids, rewards, strict=True):
            groups.setdefault(task_id, []).append(reward)
        for task_id, group in groups.items():
            self.record_group(task_id, group)

    def estimated_solve_rate(self, task_id: str) -> float:
        measured = self.records[task_id].solve_rate
        if measured is not None:
            return measured
        return DIFFICULTY_PRIOR.get(self.difficulties[task_id], DIFFICULTY_PRIOR["medium"])

    def active(self) -> list[str]:
        return [t for t in self.difficulties if not self.records[t].skipped]

    def skipped(self) -> dict[str, str]:
        return {t: r.skipped for t, r in self.records.items() if r.skipped}

    def order(self) -> list[str]:
        """Active tasks, easiest (highest estimated solve rate) first; ties keep dataset order."""
        return sorted(self.active(), key=lambda t: -self.estimated_solve_rate(t))

    def metrics(self) -> dict[str, float]:
        rates = [r.solve_rate for r in self.records.values() if r.solve_rate is not None]
        return {
            "curriculum/active_tasks": float(len(self.active())),
            "curriculum/skipped_tasks": float(len(self.skipped())),
            "curriculum/mean_solve_rate": sum(rates) / len(rates) if rates else 0.0,
        }


class CurriculumSampler(Sampler[int]):
    """Dataset indices in curriculum order, laid out like TRL's `RepeatSampler`.

    `task_ids[i]` is the task of dataset row i. One pass yields `len(task_ids)` rounded up
    to whole chunks of `tasks_per_chunk` tasks (a short last chunk wraps around to the
    start of the order). When every task is skipped, it falls back to all tasks so the
    dataloader never starves; `CurriculumStop` (in `run.py`) ends training in that case.
    """

    def __init__(
        self,
        task_ids: Sequence[str],
        curriculum: Curriculum,
        mini_repeat_count: int,
        tasks_per_chunk: int,
        repeat_count: int = 1,
    ) -> None:
        if len(set(task_ids)) != len(task_ids):
            raise ValueError(
                "CurriculumSampler needs one dataset row per task; duplicate task ids found"
            )
        self.index = {task_id: i for i, task_id in enumerate(task_ids)}
        self.curriculum = curriculum
        self.mini_repeat_count = mini_repeat_count
        self.tasks_per_chunk = tasks_per_chunk
        self.repeat_count = repeat_count
        self.scheduled = {task_id: 0 for task_id in task_ids}
        """Chunks each task was placed in (rotation works before any reward comes back)."""

    def __len__(self) -> int:
        chunks = -(-len(self.index) // self.tasks_per_chunk)
        return chunks * self.tasks_per_chunk * self.mini_repeat_count * self.repeat_count

    def __iter__(self) -> Iterator[int]:
        chunks = -(-len(self.index) // self.tasks_per_chunk)
        for _ in range(chunks):
            for task_id in self._next_chunk() * self.repeat_count:
                yield from [self.index[task_id]] * self.mini_repeat_count

    def _next_chunk(self) -> list[str]:
        order = self.curriculum.order() or list(self.index)
        # Round robin in curriculum order: the tasks scheduled least often go first.
        order = sorted(order, key=lambda t: self.scheduled[t])[: self.tasks_per_chunk]
        while len(order) < self.tasks_per_chunk:
            order += order[: self.tasks_per_chunk - len(order)]
        for task_id in order:
            self.scheduled[task_id] += 1
        return order
