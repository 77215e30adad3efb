"""Errors and reports for reading and writing tasks.

`TaskFormatError` always says where (file, `file.csv row 12 (task_id x)`, or directory),
which field (a CSV column, a file inside a task dir, or a TOML/YAML key), what is wrong,
and how to fix it. Readers raise it in strict mode; in lenient mode the loader collects
them into a `LoadReport` instead, so nothing is ever dropped without a recorded reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import ValidationError

if TYPE_CHECKING:
    from tbrl_lib.tasks.model import Task

# How to fix a bad value of each Task field (model path -> advice).
FIELD_FIXES: dict[str, str] = {
    "id": "name the task with 1-200 characters, without whitespace, '/', '\\' or control "
    "characters, not starting with '.'",
    "instruction": "write the instruction the agent should follow (non-empty text)",
    "difficulty": "use one of easy, medium, hard, extremely_hard",
    "tags": "give each tag as non-empty text without surrounding spaces or '|'",
    "environment": "give a Dockerfile (or a prebuilt image name)",
    "environment.dockerfile": "start the Dockerfile with a FROM line, e.g. "
    "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620",
    "environment.files": "use relative paths that stay inside the task directory",
    "tests": "give pytest tests (test_outputs.py) or a test script",
    "tests.pytest": "define at least one pytest test: a top-level `def test_...()` or a "
    "`test_...` method of a `class Test...`",
    "tests.weights": "name only test functions the tests define (`test_x` or `Class::test_x`), "
    "with non-negative weights that sum to more than 0; or load with --lenient, which maps "
    "keys like `x` to `test_x` and drops (and reports) what it cannot use",
    "tests.files": "use relative paths that stay inside the tests directory",
    "limits": "use positive numbers for timeouts and resource limits",
}


class TaskFormatError(ValueError):
    """A task source that cannot be read (or a task that a format cannot hold)."""

    def __init__(self, location: str, field: str, problem: str, fix: str) -> None:
        self.location = location
        self.field = field
        self.problem = problem
        self.fix = fix
        super().__init__(f"{location}: {field}: {problem}. Fix: {fix}")

    def as_dict(self) -> dict[str, str]:
        return {
            "location": self.location,
            "field": self.field,
            "problem": self.problem,
            "fix": self.fix,
        }


@dataclass
class LoadReport:
    """What a load did: how many tasks it read and every item it skipped, with why."""

    source: str = ""
    loaded: int = 0
    skipped: list[TaskFormatError] = field(default_factory=list)
    warnings: list[TaskFormatError] = field(default_factory=list)
    """What lenient reading changed in tasks it loaded (mapped or dropped weights)."""

    @property
    def ok(self) -> bool:
        return not self.skipped

    def summary(self) -> str:
        lines = [
            (
                f"{self.source}: loaded {self.loaded} task(s), skipped {len(self.skipped)}, "
                f"{len(self.warnings)} warning(s)"
            )
        ]
        lines += [f"  - {err}" for err in self.skipped]
        lines += [f"  ~ {note}" for note in self.warnings]
        return "\n".join(lines)


@dataclass
class LoadResult:
    """`load_tasks` result: the tasks, in source order, and the report."""

    tasks: list[Task]
    report: LoadReport

    def __iter__(self):  # allows `tasks, report = load_tasks(...)`
        return iter((self.tasks, self.report))


def from_validation_error(
    exc: ValidationError, location: str, field_names: Mapping[str, str]
) -> TaskFormatError:
    """Turn the first pydantic error into a `TaskFormatError` in the format's own words.

    `field_names` maps model paths (`tests.weights`) to what the format calls them
    (`test_weights` column, `tests/test_weights.json`); the longest matching prefix wins.
    """
    first = exc.errors()[0]
    path = ".".join(str(part) for part in first["loc"])
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    # Model-level validators report under their parent; their message names the field.
    named = re.search(r"\b(environment|tests)\.(dockerfile|files|weights|pytest)\b", message)
    if named and path in ("environment", "tests", ""):
        path = named.group(0)
    if path == "environment" and "dockerfile" in message:
        path = "environment.dockerfile"
    return TaskFormatError(location, _format_field(path, field_names), message, _fix_for(path))


def _format_field(path: str, field_names: Mapping[str, str]) -> str:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in field_names:
            rest = ".".join(parts[cut:])
            return field_names[prefix] + (f" ({rest})" if rest else "")
    if "" in field_names:  # the whole task sits in one field (Parquet's `task` column)
        return f"{field_names['']} ({path})" if path else field_names[""]
    return path or "task"


def _fix_for(path: str) -> str:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        advice = FIELD_FIXES.get(".".join(parts[:cut]))
        if advice:
            return advice
    return "correct the value so it matches the Task model (see tbrl_lib/tasks/model.py)"
