"""Curriculum and filtering: which tasks the next GRPO steps train on, and in what order.

GRPO learns only from groups whose rewards differ: a task every rollout solves, or none
does, gives zero advantage to all 16 rollouts and wastes their compute. So:

- `Curriculum.record_group(task_id, rewards, solved)` keeps a running solve rate per task. A
  rollout counts as solved when its tests passed (`RolloutResult.resolved`, the same
  definition as the held-out `eval/solve_rate`), never by its total reward: with 35% judge
  weight a rollout that passes every test totals about 0.69. Infra-error rollouts (reward
  None) are left out of every count;
- a task whose last `filter_after_groups` groups were all *mastered* (every rollout solved),
  all *never solved* (every reward <= 0) or all *constant* (every rollout the same partial
  reward, e.g. tests 0.2 + judge 0.3 each time) is skipped;
- a skipped task comes back after `retry_after_steps` steps (the policy has changed since:
  a task never solved may now be solved sometimes); 0 keeps it skipped for the run. Every
  skip and retry is an event in `events`, and `report()` is the filtering table;
- `order()` lists the active tasks easy -> hard by estimated solve rate: the measured rate
  when the task has been tried, else a prior from its declared difficulty.

`CurriculumSampler` feeds that order to TRL's dataloader in the layout TRL's own
`RepeatSampler` uses (each task index `num_generations` times in a row, the chunk repeated
for `steps_per_generation x num_iterations`), re-reading the curriculum before each chunk.
Both save and load their state (`state_dict` / `load_state_dict`: plain JSON, written beside
each checkpoint by `callbacks.CheckpointState`), so a resumed run continues with the same
counts, skips and schedule. What is left out: reweighting by learning progress. DAPO's dynamic sampling (dropping a
zero-variance group in the step it happens and refilling the batch) is
`hooks.DynamicSampling`'s, with tasks the curriculum picks (`refill_ids`); the
curriculum acts across steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from torch.utils.data import Sampler

DIFFICULTY_PRIOR = {"easy": 0.6, "medium": 0.4, "hard": 0.2, "extremely_hard": 0.1}
"""Solve rate assumed for a task not yet tried (ordering only)."""


@dataclass
class TaskRecord:
    rollouts: int = 0
    solved: int = 0
    groups: int = 0
    streak_kind: str | None = None
    """How the latest groups were uninformative ("mastered", "never solved", ...), or None."""
    streak: int = 0
    skipped: str | None = None
    """Why the task is skipped ("mastered in 2 groups in a row", ...), None while active."""
    skipped_at: int = 0
    """The step it was skipped at (retried `retry_after_steps` later)."""
    retries: int = 0

    @property
    def solve_rate(self) -> float | None:
        return self.solved / self.rollouts if self.rollouts else None


@dataclass
class Curriculum:
    difficulties: dict[str, str]
    """Task id -> declared difficulty, for every task the run may train on (in dataset order)."""
    filter_after_groups: int = 2
    """Skip a task after this many mastered/never-solved groups in a row; 0 disables skipping."""
    retry_after_steps: int = 0
    """Steps after which a skipped task is tried again; 0: skipped for the rest of the run."""
    records: dict[str, TaskRecord] = field(default_factory=dict)
    step: int = 0
    """StepRollout batches recorded so far (one per optimizer step's generation)."""
    events: list[dict] = field(default_factory=list)
    """Skips and retries in order: {"step", "task_id", "event", "reason"}."""
    refills: dict[str, int] = field(default_factory=dict)
    """Times each task was drawn to refill a dropped group (dynamic sampling)."""
    committed_refills: dict[str, int] = field(default_factory=dict)
    """`refills` as agreed by every process at the last `commit_refills`."""

    def __post_init__(self) -> None:
        if not self.difficulties:
            raise ValueError("Curriculum needs at least one task")
        self.records = {task_id: TaskRecord() for task_id in self.difficulties}

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs (JSON-ready): counts, skips, events, refills."""
        return {
            "step": self.step,
            "records": {t: asdict(r) for t, r in self.records.items()},
            "events": list(self.events),
            "refills": dict(self.committed_refills),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()` of a run over the same tasks."""
        if set(state["records"]) != set(self.records):
            raise ValueError(
                f"curriculum state covers tasks {sorted(state['records'])[:5]}..., this run "
                f"{sorted(self.records)[:5]}...: resume with the run's own tasks"
            )
        self.step = state["step"]
        self.records = {t: TaskRecord(**r) for t, r in state["records"].items()}
        self.events = list(state["events"])
        self.committed_refills = dict(state["refills"])
        self.refills = dict(self.committed_refills)

    def record_group(
        self, task_id: str, rewards: Sequence[float | None], solved: Sequence[bool]
    ) -> None:
        """Count one group of rollouts of `task_id`: each one's reward (None = infra error,
        not counted) and whether its tests passed (`RolloutResult.resolved`)."""
        if task_id not in self.records:
            raise KeyError(f"curriculum does not know task {task_id!r}")
        scored = [(r, s) for r, s in zip(rewards, solved, strict=True) if r is not None]
        if not scored:
            return
        record = self.records[task_id]
        passed = sum(s for _, s in scored)
        record.rollouts += len(scored)
        record.solved += passed
        record.groups += 1
        kind = group_kind([r for r, _ in scored], passed)
        record.streak = (
            record.streak + 1 if kind and kind == record.streak_kind else (1 if kind else 0)
        )
        record.streak_kind = kind
        if (
            self.filter_after_groups
            and record.streak >= self.filter_after_groups
            and not record.skipped
        ):
            record.skipped = f"{kind} in {record.streak} groups in a row"
            record.skipped_at = self.step
            self.events.append(
                {
                    "step": self.step,
                    "task_id": task_id,
                    "event": "skipped",
                    "reason": record.skipped,
                }
            )

    def record_rollouts(
        self,
        task_ids: Sequence[str],
        rewards: Sequence[float | None],
        solved: Sequence[bool],
    ) -> None:
        """One step's rollouts: group them by task id (TRL keeps a group's rollouts
        together), count each group, then bring back tasks whose skip has expired."""
        self.step += 1
        groups: dict[str, tuple[list[float | None], list[bool]]] = {}
        for task_id, reward, ok in zip(task_ids, rewards, solved, strict=True):
            group = groups.setdefault(task_id, ([], []))
            group[0].append(reward)
            group[1].append(ok)
        for task_id, (group_rewards, group_solved) in groups.items():
            self.record_group(task_id, group_rewards, group_solved)
        self._retry_expired()

    def _retry_expired(self) -> None:
        if not self.retry_after_steps:
            return
        for task_id, record in self.records.items():
            if record.skipped and self.step - record.skipped_at >= self.retry_after_steps:
                self.events.append(
                    {
                        "step": self.step,
                        "task_id": task_id,
                        "event": "retried",
                        "reason": f"skipped {self.step - record.skipped_at} steps ago ({record.skipped})",
                    }
                )
                record.skipped, record.streak, record.streak_kind = None, 0, None
                record.retries += 1

    def refill_ids(self, n: int, exclude: set[str]) -> list[str]:
        """Up to `n` active tasks outside `exclude` for dynamic sampling's refill groups: the
        least drawn first, ties in curriculum order (easy -> hard)."""
        order = [t for t in self.order() if t not in exclude]
        chosen = sorted(order, key=lambda t: self.refills.get(t, 0))[:n]
        for task_id in chosen:
            self.refills[task_id] = self.refills.get(task_id, 0) + 1
        return chosen

    def commit_refills(self, drawn: Sequence[str]) -> None:
        """Make `refills` the same on every process: the last agreed counts plus the refill
        draws of this step on all processes (`drawn`; one process: its own draws)."""
        self.committed_refills = dict(Counter(self.committed_refills) + Counter(drawn))
        self.refills = dict(self.committed_refills)

    def report(self) -> list[dict]:
        """The filtering table: one row per task that was ever skipped, with why and when."""
        rows = []
        for task_id, record in self.records.items():
            skips = [e for e in self.events if e["task_id"] == task_id and e["event"] == "skipped"]
            if not skips:
                continue
            rows.append(
                {
                    "task_id": task_id,
                    "groups": record.groups,
                    "solve_rate": record.solve_rate,
                    "skips": len(skips),
                    "retries": record.retries,
                    "status": status(record),
                    "last_reason": skips[-1]["reason"],
                }
            )
        return rows

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
            "curriculum/mastered_tasks": float(
                sum(status(r) == MASTERED for r in self.records.values())
            ),
            "curriculum/retried_tasks": float(sum(r.retries for r in self.records.values())),
            "curriculum/mean_solve_rate": sum(rates) / len(rates) if rates else 0.0,
        }


def status(record: TaskRecord) -> str:
    """A task's row status: `mastered` (skipped: every rollout solved), `skipped` (never
    solved, constant reward) or `active` (never skipped, or brought back)."""
    if not record.skipped:
        return "active"
    return MASTERED if record.skipped.startswith(MASTERED) else "skipped"


def no_spread(rewards: Sequence[float]) -> bool:
    """All rewards equal (within float noise): a group GRPO gives zero advantage."""
    return max(rewards) - min(rewards) < 1e-9


MASTERED = "mastered"
"""The kind of a group whose every rollout passed the tests."""


def group_kind(scored: Sequence[float], solved: int) -> str | None:
    """How a group is uninformative, or None when GRPO learns from it: `MASTERED` when all
    `solved` (whatever the judge's spread), else no reward or one constant reward."""
    if solved == len(scored):
        return MASTERED
    if max(scored) <= 0:
        return "never solved"
    if no_spread(scored):
        return f"constant reward {scored[0]:.2f}"
    return None


class CurriculumSampler(Sampler[int]):
    """Dataset indices in curriculum order, laid out like TRL's `RepeatSampler`.

    `task_ids[i]` is the task of dataset row i. One pass yields `len(task_ids)` rounded up
    to whole chunks of `tasks_per_chunk` tasks (a short last chunk wraps around to the
    start of the order). When every task is skipped, it falls back to all tasks so the
    dataloader never starves; `callbacks.CurriculumStop` ends training in that case.
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
        self.drawn: list[list[str]] = []
        """Every chunk drawn so far, in order (the sampler's state)."""
        self.pending: list[list[str]] = []
        """Chunks drawn before a checkpoint but not yet trained on: replayed first on resume."""

    def state_dict(self) -> dict[str, Any]:
        return {"drawn": [list(chunk) for chunk in self.drawn]}

    def load_state_dict(self, state: dict[str, Any], consumed_chunks: int) -> None:
        """Continue after a checkpoint whose steps trained on the first `consumed_chunks`
        drawn chunks; chunks drawn ahead of that (the dataloader prefetches) come next."""
        self.drawn = [list(chunk) for chunk in state["drawn"]]
        self.pending = self.drawn[consumed_chunks:]
        counts = Counter(t for chunk in self.drawn for t in chunk)
        self.scheduled = {task_id: counts.get(task_id, 0) for task_id in self.index}

    def __len__(self) -> int:
        chunks = -(-len(self.index) // self.tasks_per_chunk)
        return chunks * self.tasks_per_chunk * self.mini_repeat_count * self.repeat_count

    def __iter__(self) -> Iterator[int]:
        chunks = -(-len(self.index) // self.tasks_per_chunk)
        for _ in range(chunks):
            for task_id in self._next_chunk() * self.repeat_count:
                yield from [self.index[task_id]] * self.mini_repeat_count

    def _next_chunk(self) -> list[str]:
        if self.pending:
            return self.pending.pop(0)
        order = self.curriculum.order() or list(self.index)
        # Round robin in curriculum order: the tasks scheduled least often go first.
        order = sorted(order, key=lambda t: self.scheduled[t])[: self.tasks_per_chunk]
        while len(order) < self.tasks_per_chunk:
            order += order[: self.tasks_per_chunk - len(order)]
        for task_id in order:
            self.scheduled[task_id] += 1
        self.drawn.append(order)
        return order
