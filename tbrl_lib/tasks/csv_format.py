"""The upstream Terminal-Bench-RL CSV schema (`latest_verified.csv`): read and write.

One row per task; columns exactly as upstream (`CSV_COLUMNS`). `tags` is `|`-separated,
`test_weights` and `additional_files` are JSON objects, `test_functions` is pytest source.

What the schema cannot hold, and so a CSV round trip drops (see `csv_projection`): a
test script, test fixture files, the reference solution, limits, `Task.metadata`, and a
prebuilt image (written as a one-line `FROM image` Dockerfile instead). Empty `title` /
`use_case_category` read back as None. Columns beyond the upstream ones are read into
`Task.metadata` (as text) rather than ignored. Rows are numbered from 1, header excluded.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from tbrl_lib.tasks.errors import TaskFormatError, from_validation_error
from tbrl_lib.tasks.files import decode_utf8, parse_json_object, parse_weights
from tbrl_lib.tasks.model import Environment, Limits, Provenance, Task, Tests

CSV_COLUMNS = [
    "task_id", "difficulty", "title", "use_case_category", "prompt", "category", "tags",
    "dockerfile", "test_functions", "test_weights", "additional_files", "created_at", "updated_at",
]
FIELD_NAMES = {
    "id": "task_id", "instruction": "prompt", "difficulty": "difficulty", "category": "category",
    "tags": "tags", "title": "title", "use_case_category": "use_case_category",
    "environment.dockerfile": "dockerfile", "environment.files": "additional_files",
    "environment": "dockerfile", "tests.pytest": "test_functions", "tests.weights": "test_weights",
    "tests": "test_functions",
}


def read_csv(path: Path) -> Iterator[Task | TaskFormatError]:
    """Yield a `Task` or a `TaskFormatError` per row. A file that cannot be read at all
    (missing, or missing a column) raises `TaskFormatError` instead."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFormatError(str(path), "file", f"cannot read: {exc}", "check the path") from None
    # surrogateescape keeps going past bad bytes so the row that holds them can be named
    text = data.decode("utf-8", errors="surrogateescape")
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [column for column in CSV_COLUMNS if column not in header]
    if missing:
        raise TaskFormatError(
            str(path), f"column {', '.join(missing)}", f"missing from the header (found {header})",
            f"add the column(s); the upstream schema is: {','.join(CSV_COLUMNS)}",
        )
    for number, row in enumerate(reader, start=1):
        location = f"{path} row {number} (task_id {row.get('task_id') or '?'})"
        try:
            yield row_to_task(row, location, source=f"{path} row {number}")
        except TaskFormatError as err:
            yield err


def row_to_task(row: dict[str, str | None], location: str, source: str = "") -> Task:
    for column, value in row.items():
        if column is None or value is None:
            raise TaskFormatError(location, "row", "has a different number of fields than the header",
                                  "quote fields that contain commas or newlines")
        if _has_surrogates(value):
            decode_utf8(value.encode("utf-8", errors="surrogateescape"), location, column)
    weights = parse_weights(
        parse_json_object(row["test_weights"] or "{}", location, "test_weights",
                          'write a JSON object, e.g. {"test_a": 0.5, "test_b": 0.5}'),
        location, "test_weights",
    )
    files = parse_json_object(row["additional_files"] or "{}", location, "additional_files",
                              'write a JSON object mapping relative path to file text, e.g. {"app.py": "..."}')
    bad = [name for name, content in files.items() if not isinstance(content, str)]
    if bad:
        raise TaskFormatError(location, "additional_files", f"content of {bad} is not text",
                              "give each file's content as a JSON string")
    extra = {column: value for column, value in row.items() if column not in CSV_COLUMNS}
    try:
        return Task(
            id=row["task_id"], instruction=row["prompt"], difficulty=row["difficulty"],
            category=row["category"], tags=row["tags"].split("|") if row["tags"] else [],
            title=row["title"] or None, use_case_category=row["use_case_category"] or None,
            environment=Environment(dockerfile=row["dockerfile"] or None, files=files),
            tests=Tests(pytest=row["test_functions"] or None, weights=weights),
            provenance=Provenance(source_format="csv", location=source or location,
                                  created_at=row["created_at"] or None, updated_at=row["updated_at"] or None),
            metadata=extra,
        )
    except ValidationError as exc:
        raise from_validation_error(exc, location, FIELD_NAMES) from None


def task_to_row(task: Task) -> dict[str, str]:
    """The task as a CSV row; a task without pytest tests cannot be written."""
    if not task.tests.pytest:
        raise TaskFormatError(task.id, "tests.pytest", "the CSV schema holds only pytest tests (test_functions)",
                              "add pytest tests, or write this task as a TB1 or Harbor directory")
    dockerfile = task.environment.dockerfile or f"FROM {task.environment.image}\n"
    return {
        "task_id": task.id, "difficulty": task.difficulty.value, "title": task.title or "",
        "use_case_category": task.use_case_category or "", "prompt": task.instruction,
        "category": task.category, "tags": "|".join(task.tags), "dockerfile": dockerfile,
        "test_functions": task.tests.pytest,
        "test_weights": json.dumps(task.tests.weights),
        "additional_files": json.dumps(task.environment.files),
        "created_at": task.provenance.created_at or "", "updated_at": task.provenance.updated_at or "",
    }


def write_csv(rows: list[dict[str, str]], path: Path) -> None:
    """Write rows made by `task_to_row` (made in parallel by the caller)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        # csv quotes fields holding "\n" but not a lone "\r", which readers take as a line end
        has_cr = any("\r" in value for row in rows for value in row.values())
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n",
                                quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL)
        writer.writeheader()
        writer.writerows(rows)


def csv_projection(task: Task) -> Task:
    """What `task` becomes after a CSV round trip (the fields the schema holds)."""
    dockerfile = task.environment.dockerfile or f"FROM {task.environment.image}\n"
    return task.model_copy(update={
        "title": task.title or None,
        "use_case_category": task.use_case_category or None,
        "environment": Environment(dockerfile=dockerfile, files=task.environment.files),
        "tests": Tests(pytest=task.tests.pytest, weights=task.tests.weights),
        "solution": None, "limits": Limits(), "metadata": {},
    })


def _has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
