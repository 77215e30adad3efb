"""The upstream Terminal-Bench-RL CSV schema (`latest_verified.csv`): read and write.

One row per task; columns exactly as upstream (`CSV_COLUMNS`). `tags` is `|`-separated,
`test_weights` and `additional_files` are JSON objects, `test_functions` is pytest source.
A binary build-context file (not in the upstream data, which is all text) is an
`additional_files` entry `{"base64": "..."}` instead of a string. With `lenient=True`,
`test_weights` is read as `files.parse_weights` describes.

What the schema cannot hold, and so a CSV round trip drops (see `csv_projection`): a
test script, test fixture files, the reference solution, limits, `Task.metadata`, and a
prebuilt image (written as a one-line `FROM image` Dockerfile instead). Empty `title` /
`use_case_category` read back as None. Columns beyond the upstream ones are read into
`Task.metadata` (as text) rather than ignored. Rows are numbered from 1, header excluded.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from tbrl_lib.tasks.errors import TaskFormatError, from_validation_error
from tbrl_lib.tasks.files import decode_utf8, parse_json_object, parse_weights
from tbrl_lib.tasks.model import (
    Environment,
    Limits,
    Provenance,
    Task,
    Tests,
    changed_fields,
    test_function_names,
)

CSV_COLUMNS = [
    "task_id",
    "difficulty",
    "title",
    "use_case_category",
    "prompt",
    "category",
    "tags",
    "dockerfile",
    "test_functions",
    "test_weights",
    "additional_files",
    "created_at",
    "updated_at",
]
FIELD_NAMES = {
    "id": "task_id",
    "instruction": "prompt",
    "difficulty": "difficulty",
    "category": "category",
    "tags": "tags",
    "title": "title",
    "use_case_category": "use_case_category",
    "environment.dockerfile": "dockerfile",
    "environment.files": "additional_files",
    "environment": "dockerfile",
    "tests.pytest": "test_functions",
    "tests.weights": "test_weights",
    "tests": "test_functions",
}


def read_csv(path: Path, lenient: bool = False) -> Iterator[Task | TaskFormatError]:
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
            str(path),
            f"column {', '.join(missing)}",
            f"missing from the header (found {header})",
            f"add the column(s); the upstream schema is: {','.join(CSV_COLUMNS)}",
        )
    for number, row in enumerate(reader, start=1):
        location = f"{path} row {number} (task_id {row.get('task_id') or '?'})"
        try:
            yield row_to_task(row, location, source=f"{path} row {number}", lenient=lenient)
        except TaskFormatError as err:
            yield err


def row_to_task(
    row: dict[str, str | None], location: str, source: str = "", lenient: bool = False
) -> Task:
    for column, value in row.items():
        if column is None or value is None:
            raise TaskFormatError(
                location,
                "row",
                "has a different number of fields than the header",
                "quote fields that contain commas or newlines",
            )
        if _has_surrogates(value):
            decode_utf8(value.encode("utf-8", errors="surrogateescape"), location, column)
    weights, notes = parse_weights(
        parse_json_object(
            row["test_weights"] or "{}",
            location,
            "test_weights",
            'write a JSON object, e.g. {"test_a": 0.5, "test_b": 0.5}',
        ),
        location,
        "test_weights",
        test_function_names(row["test_functions"]) if row["test_functions"] else None,
        lenient,
    )
    files, binary = _split_files(
        parse_json_object(
            row["additional_files"] or "{}",
            location,
            "additional_files",
            'write a JSON object mapping relative path to file text, e.g. {"app.py": "..."}',
        ),
        location,
    )
    extra = {column: value for column, value in row.items() if column not in CSV_COLUMNS}
    try:
        return Task(
            id=row["task_id"],
            instruction=row["prompt"],
            difficulty=row["difficulty"],
            category=row["category"],
            tags=row["tags"].split("|") if row["tags"] else [],
            title=row["title"] or None,
            use_case_category=row["use_case_category"] or None,
            environment=Environment(
                dockerfile=row["dockerfile"] or None, files=files, binary_files=binary
            ),
            tests=Tests(pytest=row["test_functions"] or None, weights=weights),
            provenance=Provenance(
                source_format="csv",
                location=source or location,
                notes=notes,
                created_at=row["created_at"] or None,
                updated_at=row["updated_at"] or None,
            ),
            metadata=extra,
        )
    except ValidationError as exc:
        raise from_validation_error(exc, location, FIELD_NAMES) from None


def task_to_row(task: Task) -> dict[str, str]:
    """The task as a CSV row; a task without pytest tests cannot be written."""
    if not task.tests.pytest:
        raise TaskFormatError(
            task.id,
            "tests.pytest",
            "the CSV schema holds only pytest tests (test_functions)",
            "add pytest tests, or write this task as a TB1 or Harbor directory",
        )
    dockerfile = task.environment.dockerfile or f"FROM {task.environment.image}\n"
    return {
        "task_id": task.id,
        "difficulty": task.difficulty.value,
        "title": task.title or "",
        "use_case_category": task.use_case_category or "",
        "prompt": task.instruction,
        "category": task.category,
        "tags": "|".join(task.tags),
        "dockerfile": dockerfile,
        "test_functions": task.tests.pytest,
        "test_weights": json.dumps(task.tests.weights),
        "additional_files": json.dumps(
            {
                **task.environment.files,
                **{
                    rel: {"base64": base64.b64encode(data).decode("ascii")}
                    for rel, data in task.environment.binary_files.items()
                },
            }
        ),
        "created_at": task.provenance.created_at or "",
        "updated_at": task.provenance.updated_at or "",
    }


def write_csv(rows: list[dict[str, str]], path: Path) -> None:
    """Write rows made by `task_to_row` (made in parallel by the caller)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        # csv quotes fields holding "\n" but not a lone "\r", which readers take as a line end
        has_cr = any("\r" in value for row in rows for value in row.values())
        writer = csv.DictWriter(
            fh,
            fieldnames=CSV_COLUMNS,
            lineterminator="\n",
            quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL,
        )
        writer.writeheader()
        writer.writerows(rows)


def csv_projection(task: Task) -> Task:
    """What `task` becomes after a CSV round trip (the fields the schema holds)."""
    dockerfile = task.environment.dockerfile or f"FROM {task.environment.image}\n"
    return task.model_copy(
        update={
            "title": task.title or None,
            "use_case_category": task.use_case_category or None,
            "environment": Environment(
                dockerfile=dockerfile,
                files=task.environment.files,
                binary_files=task.environment.binary_files,
            ),
            "tests": Tests(pytest=task.tests.pytest, weights=task.tests.weights),
            "solution": None,
            "limits": Limits(),
            "metadata": {},
        }
    )


def dropped_fields(task: Task) -> list[str]:
    """The `Task` fields a CSV round trip of `task` loses (none for a task it cannot hold)."""
    return changed_fields(task, csv_projection(task)) if task.tests.pytest else []


def _split_files(
    files: dict[str, object], location: str
) -> tuple[dict[str, str], dict[str, bytes]]:
    """`additional_files` entries: text as strings, binary as `{"base64": "..."}` objects
    (decoded bytes that are UTF-8 count as text, as a directory reader would see them)."""
    text: dict[str, str] = {}
    binary: dict[str, bytes] = {}
    for name, content in files.items():
        if isinstance(content, str):
            text[name] = content
            continue
        data = _base64_entry(content)
        if data is None:
            raise TaskFormatError(
                location,
                f"additional_files ({name})",
                f'content is {json.dumps(content)[:80]}, neither text nor {{"base64": "..."}}',
                'give text as a JSON string and binary data as {"base64": "<the bytes>"}',
            )
        try:
            text[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            binary[name] = data
    return text, binary


def _base64_entry(content: object) -> bytes | None:
    if not isinstance(content, dict) or set(content) != {"base64"}:
        return None
    if not isinstance(content["base64"], str):
        return None
    try:
        return base64.b64decode(content["base64"], validate=True)
    except binascii.Error:
        return None


def _has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
