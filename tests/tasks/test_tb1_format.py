"""Terminal-Bench 1 task dirs: layout, generated files recognised on read, legacy
`descriptions`, build-context files under tests/, and malformed dirs named precisely (the
weights file's cases, shared with Harbor: `test_weights_files.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tbrl_lib.tasks import TaskFormatError
from tbrl_lib.tasks.standard_files import TB1_RUN_TESTS, tb1_compose
from tbrl_lib.tasks.tb1_format import TB1_AGENT_TIMEOUT, read_tb1_dir, write_tb1_dir

from .helpers import assert_names, make_task


@pytest.fixture
def task_dir(tmp_path) -> Path:
    return write_tb1_dir(
        make_task(metadata={"author_email": "a@b.c", "parser_name": "pytest"}), tmp_path
    )


def test_layout_and_task_yaml(task_dir):
    files = sorted(p.relative_to(task_dir).as_posix() for p in task_dir.rglob("*") if p.is_file())
    assert files == [
        "Dockerfile",
        "data/in.txt",
        "docker-compose.yaml",
        "run-tests.sh",
        "solution.sh",
        "task.yaml",
        "test_weights.json",
        "tests/expected.txt",
        "tests/test_outputs.py",
    ]
    config = yaml.safe_load((task_dir / "task.yaml").read_text())
    assert config["instruction"] == make_task().instruction
    assert config["parser_name"] == "pytest" and config["max_test_timeout_sec"] == 180.0
    assert config["tbrl"] == {"title": "Write a file"}
    assert (task_dir / "run-tests.sh").read_text() == TB1_RUN_TESTS
    assert (task_dir / "docker-compose.yaml").read_text() == tb1_compose()


def test_generated_files_read_back_as_absent(task_dir):
    task = read_tb1_dir(task_dir)
    assert task.tests.script is None and "docker-compose.yaml" not in task.environment.files
    assert task.metadata == {"author_email": "a@b.c", "parser_name": "pytest"}


def test_foreign_tb1_dir_with_descriptions_and_defaults(tmp_path):
    root = tmp_path / "hello-world"
    (root / "tests").mkdir(parents=True)
    (root / "task.yaml").write_text(
        "descriptions:\n  - key: base\n    description: Say hello.\n  - key: hard\n    description: Loudly.\n"
        "author_email: x@y.z\ndifficulty: easy\ntags: [intro]\n"
    )
    (root / "Dockerfile").write_text("FROM tbrl/base:trixie\n")
    (root / "docker-compose.yaml").write_text(
        "services:\n  client:\n    build: {dockerfile: Dockerfile}\n"
    )
    (root / "run-tests.sh").write_text("#!/bin/bash\nbash $TEST_DIR/setup.sh && pytest $TEST_DIR\n")
    (root / "tests/test_outputs.py").write_text("def test_hello():\n    pass\n")
    task = read_tb1_dir(root)
    assert task.instruction == "Say hello."
    assert task.metadata["descriptions"] == [{"key": "hard", "description": "Loudly."}]
    assert task.limits.agent_timeout_sec == TB1_AGENT_TIMEOUT  # TB1's default, not tbrl's
    assert task.tests.script.startswith("#!/bin/bash\nbash")
    assert "docker-compose.yaml" in task.environment.files  # a custom compose file is kept


def test_context_files_under_tests_survive(tmp_path):
    task = make_task(
        environment={
            "dockerfile": "FROM tbrl/base:trixie\nCOPY tests/ /app/tests/\n",
            "files": {"tests/test_app.py": "def test_app():\n    pass\n"},
        }
    )
    root = write_tb1_dir(task, tmp_path)
    assert (root / "tests/test_app.py").exists()
    assert read_tb1_dir(root).same_task(task)


def test_prebuilt_image_only(tmp_path):
    task = make_task(environment={"image": "ghcr.io/laude-institute/t-bench/python-3-13:20250620"})
    root = write_tb1_dir(task, tmp_path)
    assert not (root / "Dockerfile").exists()
    assert "image: ghcr.io/laude-institute" in (root / "docker-compose.yaml").read_text()
    assert read_tb1_dir(root).same_task(task)


@pytest.mark.parametrize(
    "task_changes, field, problem",
    [
        ({"metadata": {"difficulty": "x"}}, "metadata", "collide"),
        (
            {"environment": {"dockerfile": "FROM a\n", "files": {"run-tests.sh": ""}}},
            "run-tests.sh",
            "collides",
        ),
        (
            {"environment": {"dockerfile": "FROM a\n", "files": {"a": "", "a/b": ""}}},
            "(a)",
            "both a file and a directory",
        ),
        (
            {"environment": {"dockerfile": "FROM a\n", "files": {"__pycache__/m.pyc": ""}}},
            "__pycache__",
            "bytecode",
        ),
    ],
)
def test_tasks_tb1_cannot_hold_are_refused(tmp_path, task_changes, field, problem):
    with pytest.raises(TaskFormatError) as err:
        write_tb1_dir(make_task(**task_changes), tmp_path)
    assert_names(err, "demo-task", field, problem)
    assert not (tmp_path / "demo-task").exists()


@pytest.mark.parametrize(
    "mutate, field, problem",
    [
        (
            lambda d: (d / "task.yaml").write_text("instruction: [unclosed\n"),
            "task.yaml",
            "invalid YAML",
        ),
        (lambda d: (d / "task.yaml").write_text("- a list\n"), "task.yaml", "mapping"),
        (
            lambda d: (d / "task.yaml").write_text("difficulty: easy\n"),
            "task.yaml (instruction)",
            "missing",
        ),
        (
            lambda d: (d / "task.yaml").write_text("instruction: ''\n"),
            "task.yaml (instruction)",
            "empty",
        ),
        (
            lambda d: (d / "task.yaml").write_text("instruction: x\ntags: 3\n"),
            "task.yaml (tags)",
            "list",
        ),
        (
            lambda d: (d / "task.yaml").write_text("instruction: x\nmax_agent_timeout_sec: -5\n"),
            "task.yaml (limits)",
            "greater than 0",
        ),
        (lambda d: (d / "Dockerfile").unlink(), "Dockerfile", "missing"),
        (lambda d: (d / "Dockerfile").write_text("# only a comment\n"), "Dockerfile", "no FROM"),
        (
            lambda d: (d / "tests/test_outputs.py").write_bytes(
                b"def test_a():\n    assert '\xe9'\n"
            ),
            "tests/test_outputs.py",
            "not UTF-8",
        ),
        (
            lambda d: ((d / "tests/test_outputs.py").unlink(), (d / "run-tests.sh").unlink()),
            "tests/test_outputs.py",
            "missing",
        ),
        (
            lambda d: ((d / "tests/test_outputs.py").write_text(""), (d / "run-tests.sh").unlink()),
            "tests/test_outputs.py",
            "tests need pytest source or a test script",
        ),
        (
            lambda d: (d / "solution.yaml").write_text("- command: ls\n"),
            "solution.yaml",
            "not supported",
        ),
        (
            lambda d: (d / "task.yaml").write_text("instruction: x\ntbrl:\n  colour: red\n"),
            "task.yaml (tbrl)",
            "unknown keys ['colour']",
        ),
    ],
)
def test_malformed_dir_error_names_file_field_and_problem(task_dir, mutate, field, problem):
    mutate(task_dir)
    with pytest.raises(TaskFormatError) as err:
        read_tb1_dir(task_dir)
    assert_names(err, str(task_dir), field, problem)
