"""Round trips: hypothesis-generated tasks and the 331 upstream rows through every format.

Equality is `Task.same_task` (everything but provenance), except for the CSV schema, which
holds less: there the expected result is `csv_projection(task)` (documented in csv_format).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.tasks import load_tasks, write_tasks
from tbrl_lib.tasks.csv_format import csv_projection

from .strategies import tasks

# 40 per format keeps the suite fast; set TBRL_HYPOTHESIS_EXAMPLES=400 for a deeper search.
EXAMPLES = int(os.environ.get("TBRL_HYPOTHESIS_EXAMPLES", "40"))
FILE_SUFFIX = {"csv": "tasks.csv", "parquet": "tasks.parquet"}


def round_trip(task_list, fmt: str, where: Path):
    out = where / FILE_SUFFIX.get(fmt, fmt)
    write_tasks(task_list, fmt, out, progress=False, prompt_fn=initial_messages)
    loaded, report = load_tasks(out, progress=False)
    assert report.ok, report.summary()
    return loaded


@pytest.mark.parametrize("fmt", ["tb1", "harbor", "parquet", "csv"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=tasks())
def test_generated_task_survives_each_format(fmt, task):
    if fmt == "csv":
        assume(task.tests.pytest is not None)  # the CSV schema cannot hold script-only tests
    with tempfile.TemporaryDirectory() as tmp:
        [back] = round_trip([task], fmt, Path(tmp))
    expected = csv_projection(task) if fmt == "csv" else task
    assert back.model_dump(exclude={"provenance"}) == expected.model_dump(exclude={"provenance"})
    assert back.same_task(expected)
    assert back.provenance.source_format == fmt


@pytest.fixture(scope="module")
def upstream_tasks(upstream_csv):
    result = load_tasks(upstream_csv, "strict", progress=False)
    return result.tasks, result.report


def test_all_upstream_rows_load_without_error(upstream_tasks):
    loaded, report = upstream_tasks
    assert report.ok and report.loaded == 331 == len(loaded)
    assert {t.difficulty.value for t in loaded} == {"easy", "medium", "hard", "extremely_hard"}
    assert sum(bool(t.environment.files) for t in loaded) == 331 - 128  # rows with additional_files
    assert all(t.tests.weights and abs(sum(t.tests.weights.values()) - 1) < 1e-6 for t in loaded)


@pytest.mark.parametrize("fmt", ["tb1", "harbor", "parquet", "csv"])
def test_upstream_rows_round_trip_through_each_format(upstream_tasks, fmt, tmp_path):
    loaded, _ = upstream_tasks
    back = round_trip(loaded, fmt, tmp_path)
    by_id = {t.id: t for t in back}
    assert sorted(by_id) == sorted(t.id for t in loaded)
    different = [t.id for t in loaded if not t.same_task(by_id[t.id])]
    assert different == []
    # created_at/updated_at (provenance) travel too
    assert all(by_id[t.id].provenance.created_at == t.provenance.created_at for t in loaded)


def test_upstream_csv_rewritten_matches_source_except_number_spelling(
    upstream_csv, upstream_tasks, tmp_path
):
    import csv

    loaded, _ = upstream_tasks
    out = tmp_path / "again.csv"
    write_tasks(loaded, "csv", out, progress=False)
    with (
        open(upstream_csv, newline="", encoding="utf-8") as a,
        open(out, newline="", encoding="utf-8") as b,
    ):
        original, rewritten = list(csv.DictReader(a)), list(csv.DictReader(b))
    assert list(original[0]) == list(rewritten[0])  # same columns, same order
    for row_a, row_b in zip(original, rewritten):
        for column in row_a:
            if column != "test_weights":  # JSON numbers may be respelled (0.50 -> 0.5)
                assert row_a[column] == row_b[column], (row_a["task_id"], column)
