"""The bundled dataset `data/tasks/`: enough tasks, every difficulty, many categories, and
each task complete (instruction, offline base image, weighted pytest tests, reference
solution, limits). The last test validates every task in containers (docker, slow), as
`tbrl tasks validate data/tasks` does."""

from __future__ import annotations

import ast
import math
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.model import Difficulty

DATA = Path(__file__).resolve().parents[2] / "data" / "tasks"
BASE = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"


@pytest.fixture(scope="module")
def tasks():
    result = load_tasks(DATA, mode="strict")
    assert not result.report.skipped, result.report.skipped
    return result.tasks


def test_every_task_directory_loads(tasks):
    dirs = sorted(p.name for p in DATA.iterdir() if p.is_dir())
    assert sorted(t.id for t in tasks) == dirs
    assert len(tasks) >= 40


def test_mix_of_difficulties_and_categories(tasks):
    by_difficulty = Counter(t.difficulty for t in tasks)
    assert set(by_difficulty) == set(Difficulty), by_difficulty
    assert all(n >= 3 for n in by_difficulty.values()), by_difficulty
    categories = Counter(t.category for t in tasks)
    assert len(categories) >= 8, categories
    for needed in [
        "system-administration",
        "software-engineering",
        "debugging",
        "data-processing",
        "security",
        "file-operations",
        "scientific-computing",
        "git",
    ]:
        assert needed in categories, needed


def test_ids_titles_and_tags(tasks):
    for t in tasks:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", t.id), t.id
        assert t.title and t.tags, t.id


def test_weights_cover_every_test_and_sum_to_one(tasks):
    for t in tasks:
        names = t.tests.test_names()
        assert len(names) >= 2, f"{t.id}: a single test gives an all-or-nothing reward"
        assert sorted(t.tests.weights) == sorted(names), t.id
        assert all(w > 0 for w in t.tests.weights.values()), t.id
        assert math.isclose(sum(t.tests.weights.values()), 1.0, abs_tol=1e-9), t.id


def test_environment_is_offline_base_image(tasks):
    for t in tasks:
        first = next(line for line in t.environment.dockerfile.splitlines() if line.strip())
        assert first == f"FROM {BASE}", t.id
        assert "WORKDIR /app" in t.environment.dockerfile, t.id
        assert not re.search(r"\b(pip|apt-get|curl|wget)\b", t.environment.dockerfile), (
            f"{t.id}: the build must not need the network"
        )
        assert t.limits.allow_internet is False, t.id


def test_reference_solutions_are_strict_bash(tasks):
    for t in tasks:
        assert t.solution and t.solution.startswith("#!/usr/bin/env bash\nset -euo pipefail\n"), (
            t.id
        )
        assert not re.search(r"\b(curl|wget|pip install|apt-get)\b", t.solution), (
            f"{t.id}: solution uses the network"
        )


def test_instructions_name_what_the_tests_check(tasks):
    """Every absolute path a test opens under /app appears in the instruction (no hidden contract)."""
    for t in tasks:
        opened = set(re.findall(r"open\(\"(/app/[\w./-]+)\"", t.tests.pytest))
        for path in opened:
            assert path in t.instruction or path.rsplit("/", 1)[0] in t.instruction, (t.id, path)


def test_limits_are_set(tasks):
    for t in tasks:
        assert 60 <= t.limits.agent_timeout_sec <= 3600, t.id
        assert 30 <= t.limits.test_timeout_sec <= 600, t.id
        assert t.limits.memory_mb >= 512 and t.limits.cpus >= 1, t.id


def test_tests_import_only_what_the_container_has(tasks):
    """Test files may import the stdlib, pytest, and modules the task itself puts under /app
    (the base image has no numpy & co., and builds are offline)."""
    for t in tasks:
        own = set()
        for text in [t.solution, *t.environment.files]:
            own |= set(re.findall(r"/app/(\w+)(?:\.py|/)", text))
            own |= set(re.findall(r"^(\w+)(?:\.py$|/)", text, flags=re.MULTILINE))
        allowed = set(sys.stdlib_module_names) | {"pytest"} | own
        for node in ast.walk(ast.parse(t.tests.pytest)):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, (t.id, roots - allowed)


@pytest.mark.docker
@pytest.mark.slow
def test_every_bundled_task_validates(tasks, base_image):
    """What `tbrl tasks validate data/tasks` checks, for all of them: the image builds, the
    untouched environment scores at most 0.2, the reference solution scores 1.0, and three
    test runs agree."""
    from rich.console import Console

    from tbrl_lib.evaluate.validate import Verdict, validate_tasks, validation_table

    results = validate_tasks(tasks, concurrency=4, progress=False)
    Console(width=200).print(validation_table(results))
    failed = {r.task_id: r.reasons for r in results if r.verdict != Verdict.passed}
    assert not failed, failed
