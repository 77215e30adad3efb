"""The one reader of task directories; `tb1_format` and `harbor_format` give their layouts.

Both formats hold the same parts (a config file, a Dockerfile or an image, pytest tests and
a test script, a weights file, a solution script, build context and test fixtures) under
other names. `DirLayout` names them and carries the few steps that differ (reading the
config file, where the build context lies, which test files are fixtures); `read_task_dir`
does the rest in one order for both: config, Dockerfile and build context, tests, weights,
fixtures, solution, then the `Task`. Every problem is a `TaskFormatError` naming the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tbrl_lib.tasks.errors import TaskFormatError, from_validation_error
from tbrl_lib.tasks.files import parse_json_object, parse_weights, read_text
from tbrl_lib.tasks.model import Task, test_function_names

PYTEST = "tests/test_outputs.py"  # the same path in both formats


@dataclass
class TaskHead:
    """What a format's config file (and, in Harbor, instruction.md) says of a task."""

    fields: dict[str, Any]
    """`Task` fields as given: instruction, difficulty, category, tags, title, ..."""
    limits: dict[str, Any]
    metadata: dict[str, Any]
    image: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    context_in_tests: list[str] = field(default_factory=list)
    """Build-context files that lie under tests/ (TB1, whose build context is the root)."""


@dataclass(frozen=True)
class DirLayout:
    """Where one format keeps each part of a task, and the steps that differ."""

    source_format: str
    dockerfile: str
    script: str
    weights: str
    solution: str
    field_names: dict[str, str]
    """`Task` field -> the file (and key) that holds it, for validation errors."""
    no_image: str
    """The problem when there is neither a Dockerfile nor an image."""
    no_tests: tuple[str, str, str]
    """(field, problem, fix) when there is neither pytest nor a script; the fix may name
    `{pytest}` and `{script}`, the paths of the two."""
    standard_script: Callable[[], str]
    """The script this project writes for pytest tasks: read back as "no script"."""
    read_head: Callable[[Path, str], TaskHead]
    read_context: Callable[[Path, str, TaskHead, str | None], tuple[dict, dict, str | None]]
    """(root, location, head, Dockerfile text) -> (text files, binary files, image)."""
    read_fixtures: Callable[[Path, str, TaskHead, dict, dict], dict[str, str]]
    """(root, location, head, context text, context binary) -> test fixtures; may move
    files between the build context and the fixtures."""
    check_solution: Callable[[Path, str], None]
    """Refuses solution files the `Task` cannot hold (its solution is one script)."""


def read_task_dir(root: Path, layout: DirLayout, lenient: bool = False) -> Task:
    """Read the task directory `root` laid out as `layout`. `lenient` reads weights files
    that name tests loosely (see `files.parse_weights`)."""
    loc = str(root)
    head = layout.read_head(root, loc)
    dockerfile = _optional_text(root, layout.dockerfile, loc)
    env_text, env_binary, image = layout.read_context(root, loc, head, dockerfile)
    if dockerfile is None and image is None:
        raise TaskFormatError(
            loc, layout.dockerfile, layout.no_image, f"create {root / layout.dockerfile}"
        )
    pytest = _optional_text(root, PYTEST, loc)
    script = _optional_text(root, layout.script, loc)
    if pytest is None and script is None:
        problem_field, problem, fix = layout.no_tests
        raise TaskFormatError(
            loc,
            problem_field,
            problem,
            fix.format(pytest=root / PYTEST, script=root / layout.script),
        )
    if script == layout.standard_script() and pytest is not None:
        script = None
    weights: dict[str, float] = {}
    notes: list[str] = []
    text = _optional_text(root, layout.weights, loc)
    if text is not None:
        raw = parse_json_object(text, loc, layout.weights, 'write {"test_name": weight, ...}')
        names = test_function_names(pytest) if pytest else None
        weights, notes = parse_weights(raw, loc, layout.weights, names, lenient)
    fixtures = layout.read_fixtures(root, loc, head, env_text, env_binary)
    layout.check_solution(root, loc)
    data: dict[str, Any] = {
        "id": root.name,
        **head.fields,
        "environment": {
            "dockerfile": dockerfile,
            "image": image,
            "files": env_text,
            "binary_files": env_binary,
        },
        "tests": {"pytest": pytest, "script": script, "weights": weights, "files": fixtures},
        "solution": _optional_text(root, layout.solution, loc),
        "limits": head.limits,
        "provenance": {
            "source_format": layout.source_format,
            "location": loc,
            "notes": notes,
            "created_at": head.created_at,
            "updated_at": head.updated_at,
        },
        "metadata": head.metadata,
    }
    try:
        return Task.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, loc, layout.field_names) from None


def _optional_text(root: Path, rel: str, loc: str) -> str | None:
    path = root / rel
    return read_text(path, loc, rel) if path.exists() else None
