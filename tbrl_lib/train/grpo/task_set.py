"""The tasks of a run: which ones (`select_tasks`), their dataset rows for TRL
(`dataset_rows`), their images built before step 1 (`prebuild_images`: a task whose own
image does not build is skipped, one line each and a count), and the run's warm containers
removed at the end (`close_sandboxes`).

A run trains on the training instances of procedural families (`data.families`, interleaved:
held-out instances are never among them, `heldout/split.py`), or on a task source
(`data.tasks`: a Harbor/TB1 dir, an upstream CSV or a tasks parquet, read leniently with
`data.lenient`) narrowed by `task_ids` and `max_tasks`.
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
from tbrl_lib.sandbox import SandboxConfig, SandboxError, backend_for, close_backends
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.parquet_format import task_to_record
from tbrl_lib.train.config.config import DataSettings
from tbrl_lib.train.heldout.split import mixed_training_tasks


def select_tasks(data: DataSettings) -> list[Task]:
    """`data.family_tasks` training instances of each of `data.families` when it names any,
    else `data.tasks` (read leniently when `data.lenient`, printing what was skipped or
    changed) narrowed by `task_ids` and `max_tasks`; no task at all is an error."""
    if data.families:
        counts = [data.family_tasks] * len(data.families)
        return mixed_training_tasks(data.families, counts, data.family_difficulty, data.first_seed)
    tasks, report = load_tasks(data.tasks, mode="lenient" if data.lenient else "strict")
    if report.skipped or report.warnings:
        print(report.summary(), flush=True)
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


def prebuild_images(
    tasks: list[Task], sandbox: SandboxConfig | None = None
) -> tuple[list[Task], dict[str, str]]:
    """Build (or find cached) every task image before step 1, with progress, through
    `sandbox`'s backend (the `ray` backend builds on the node a sandbox lands on). Returns the
    tasks that built and, per task whose own image does not build here (`task_fault`), the
    reason: those are skipped, one line each and a count. An infrastructure failure stops the
    run; so does a task set none of whose tasks builds."""
    defects: dict[str, str] = {}
    backend = backend_for(sandbox)

    async def build_all() -> None:
        for task in tqdm(tasks, desc="task images", leave=False):
            try:
                await backend.prepare(task)
            except SandboxError as err:
                if not err.task_fault:
                    raise
                defects[task.id] = str(err).split("\n", 1)[0].removeprefix(f"task {task.id}: ")
                tqdm.write(f"skipping task {task.id}: its image does not build: {defects[task.id]}")

    run_sync(build_all())
    built = [t for t in tasks if t.id not in defects]
    if defects:
        print(
            f"{len(defects)} of {len(tasks)} tasks skipped (their own images do not build, see "
            f"above); training on {len(built)}",
            flush=True,
        )
    if not built:
        raise ValueError(
            f"none of the {len(tasks)} tasks builds here (first: "
            f"{next(iter(defects.values()))}); fix their Dockerfiles or train on other tasks"
        )
    return built, defects


def close_sandboxes() -> None:
    """Give back what the run's sandbox backends hold (warm containers, placements)."""
    run_sync(close_backends())
