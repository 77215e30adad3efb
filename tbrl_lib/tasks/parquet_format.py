"""Parquet for training: one row per task, self-contained.

Columns:
    task_id     the task id
    prompt      the opening chat messages ([{"role", "content"}, ...]) from
                `tbrl_lib.agent.prompts.initial_messages(task)`: what TRL's GRPO trainer reads
    task        the whole Task as JSON (`Task.model_dump_json`), so a training node rebuilds
                the environment, tests and weights from this file alone
    difficulty, category   plain columns for filtering and curriculum

Reading back uses only the `task` column (the prompt is derived from it), so the round
trip is lossless; binary build-context files travel inside it as base64. Left out: the
rendered system prompt is frozen at write time; re-export the file after changing the prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from tbrl_lib.tasks.errors import TaskFormatError, from_validation_error
from tbrl_lib.tasks.model import Task

PromptFn = Callable[[Task], list[dict[str, str]]]
COLUMNS = ["task_id", "prompt", "task", "difficulty", "category"]
SCHEMA = pa.schema(
    [
        ("task_id", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("task", pa.string()),
        ("difficulty", pa.string()),
        ("category", pa.string()),
    ]
)


def task_to_record(task: Task, prompt_fn: PromptFn) -> dict[str, object]:
    messages = [{"role": m["role"], "content": m["content"]} for m in prompt_fn(task)]
    return {
        "task_id": task.id,
        "prompt": messages,
        "task": task.model_dump_json(),
        "difficulty": task.difficulty.value,
        "category": task.category,
    }


def write_parquet(records: list[dict[str, object]], path: Path) -> None:
    """Write records made by `task_to_record` (made in parallel by the caller)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(records, schema=SCHEMA)
    pq.write_table(table, path, compression="zstd")


def read_parquet(path: Path) -> Iterator[Task | TaskFormatError]:
    """Yield a `Task` (or a `TaskFormatError`) per row; a file that is not a tbrl task
    Parquet file raises `TaskFormatError`."""
    try:
        table = pq.read_table(path, columns=["task_id", "task"])
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise TaskFormatError(
            str(path),
            "file",
            f"not a readable tbrl task Parquet file: {exc}",
            "write it with `tbrl tasks convert SRC --to parquet OUT`",
        ) from None
    for number, (task_id, blob) in enumerate(
        zip(table.column("task_id").to_pylist(), table.column("task").to_pylist()), start=1
    ):
        location = f"{path} row {number} (task_id {task_id or '?'})"
        try:
            data = json.loads(blob or "")
            data["provenance"] = {
                **data.get("provenance", {}),
                "source_format": "parquet",
                "location": f"{path} row {number}",
                "notes": [],
            }
            yield Task.model_validate(data)
        except (json.JSONDecodeError, AttributeError, TypeError) as exc:
            yield TaskFormatError(
                location,
                "task",
                f"invalid task JSON: {exc}",
                "re-export the file from the task sources",
            )
        except ValidationError as exc:
            yield from_validation_error(exc, location, {"": "task"})
