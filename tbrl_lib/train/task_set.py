"""The tasks of a run: which ones (`select_tasks`), their dataset rows for TRL
(`dataset_rows`), their images built before step 1 (`prebuild_images`), and the run's warm
containers removed at the end (`close_sandboxes`).

A run trains on the training instances of a procedural family (`data.family`: held-out
instances are never among them, `heldout.py`), or on a task source (`data.tasks`: a
Harbor/TB1 dir, an upstream CSV or a tasks parquet) narrowed by `task_ids` and `max_tasks`.
A dataset row is the parquet format's: the task's first prompt (rendered with the run's own
episode limits, which the prompt states) and the task JSON. Left out: weighting tasks
(the curriculum orders them).
"""

from __future__ import annotations

from typing import Any

from tqdm.auto import tqdm

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.aio import run_sync
from tbrl_lib.sandbox import close_pools, ensure_image
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.parquet_format import task_to_record
from tbrl_lib.train.config import DataSettings
from tbrl_lib.train.heldout import training_tasks


def select_tasks(data: DataSettings) -> list[Task]:
    """The family's training instances when `data.family` is set, else `data.tasks`
    narrowed by `task_ids` and `max_tasks`; no task at all is an error."""
    if data.family:
        return training_tasks(
            data.family, data.family_tasks, data.family_difficulty, data.first_seed
        )
    tasks = load_tasks(data.tasks, mode="strict").tasks
    if data.task_ids:
        by_id = {t.id: t for t in tasks}
        missing = [t for t in data.task_ids if t not in by_id]
        if missing:
            raise ValueError(
                f"data.task_ids {missing} are not in {data.tasks} (it has {sorted(by_id)[:10]}...)"
            )
        tasks = [by_id[t] for t in data.task_ids]
    if data.max_tasks:
        tasks = tasks[: data.max_tasks]
    if not tasks:
        raise ValueError(f"no tasks to train on in {data.tasks}")
    return tasks


def dataset_rows(tasks: list[Task], episode: EpisodeLimits) -> list[dict[str, Any]]:
    """One parquet-format row per task: its first prompt in `episode`'s limits, its JSON."""
    return [task_to_record(task, lambda t: initial_messages(t, episode)) for task in tasks]


def prebuild_images(tasks: list[Task]) -> None:
    """Build (or find cached) every task image before step 1, with progress."""

    async def build_all() -> None:
        for task in tqdm(tasks, desc="task images", leave=False):
            await ensure_image(task)

    run_sync(build_all())


def close_sandboxes() -> None:
    """Remove the run's warm containers (every pool of this process)."""
    run_sync(close_pools())
