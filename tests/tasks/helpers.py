"""Small builders shared by the format tests: a valid task, and assertions on errors."""

from __future__ import annotations

import pytest

from tbrl_lib.tasks import TaskFormatError, model

PYTEST = "def test_file_exists():\n    assert True\n\n\ndef test_content():\n    assert True\n"


def make_task(**changes) -> model.Task:
    data = {
        "id": "demo-task",
        "instruction": "Create /app/out.txt containing hello.\n",
        "difficulty": "easy",
        "category": "file-operations",
        "tags": ["files", "bash"],
        "title": "Write a file",
        "environment": {
            "dockerfile": "FROM tbrl/base:trixie\nWORKDIR /app\n",
            "files": {"data/in.txt": "x\n"},
        },
        "tests": {
            "pytest": PYTEST,
            "weights": {"test_file_exists": 0.3, "test_content": 0.7},
            "files": {"expected.txt": "hello\n"},
        },
        "solution": "echo hello > /app/out.txt\n",
    }
    data.update(changes)
    return model.Task.model_validate(data)


def assert_names(
    err: pytest.ExceptionInfo[TaskFormatError] | TaskFormatError,
    location: str,
    field: str,
    problem: str,
) -> None:
    """The error names where, which field, and what is wrong, and carries a fix."""
    error = err.value if isinstance(err, pytest.ExceptionInfo) else err
    assert location in error.location, error
    assert field in error.field, error
    assert problem in error.problem, error
    assert error.fix and "Fix:" in str(error)
