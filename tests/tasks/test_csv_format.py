"""Upstream CSV schema: exact columns, what it drops (reported), and malformed rows named by
file, row, task id and column; strict stops at the first, lenient reports each."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tbrl_lib.tasks import TaskFormatError, load_tasks, write_tasks
from tbrl_lib.tasks.csv_format import CSV_COLUMNS, read_csv

from .helpers import assert_names, make_task


def write_rows(path: Path, rows: list[dict[str, str]], columns=CSV_COLUMNS) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def good_row(name: str = "row-task", **changes: str) -> dict[str, str]:
    row = {
        "task_id": name,
        "difficulty": "medium",
        "title": "T",
        "use_case_category": "",
        "prompt": "Do it.",
        "category": "debugging",
        "tags": "a|b",
        "dockerfile": "FROM tbrl/base:trixie\n",
        "test_functions": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
        "test_weights": json.dumps({"test_one": 0.5, "test_two": 0.5}),
        "additional_files": json.dumps({"app/main.py": "print(1)\n"}),
        "created_at": "2025-07-22T10:02:46+00:00",
        "updated_at": "",
    }
    row.update(changes)
    return row


def test_good_row_reads_into_every_field(tmp_path):
    [task] = list(read_csv(write_rows(tmp_path / "t.csv", [good_row()])))
    assert task.id == "row-task" and task.tags == ["a", "b"] and task.use_case_category is None
    assert task.environment.files == {"app/main.py": "print(1)\n"}
    assert task.tests.weights == {"test_one": 0.5, "test_two": 0.5}
    assert (
        task.provenance.created_at == "2025-07-22T10:02:46+00:00"
        and task.provenance.updated_at is None
    )
    assert task.provenance.location.endswith("t.csv row 1")


def test_writer_reports_fields_the_schema_drops(tmp_path):
    task = make_task(
        limits={"cpus": 2.0}, metadata={"author": "me"}, environment={"image": "x/y:1"}
    )
    report = write_tasks([task], "csv", tmp_path / "out.csv", progress=False)
    assert sorted(report.dropped["demo-task"]) == [
        "environment.dockerfile",
        "environment.image",
        "limits.cpus",
        "metadata",
        "solution",
        "tests.files",
    ]
    [back] = load_tasks(tmp_path / "out.csv", progress=False).tasks
    assert back.environment.dockerfile == "FROM x/y:1\n"


def test_script_only_task_cannot_be_written(tmp_path):
    task = make_task(tests={"script": "bash check.sh"})
    with pytest.raises(TaskFormatError) as err:
        write_tasks([task], "csv", tmp_path / "out.csv", progress=False)
    assert_names(err, "demo-task", "tests.pytest", "only pytest")
    report = write_tasks(
        [task, make_task(id="other")], "csv", tmp_path / "out.csv", mode="lenient", progress=False
    )
    assert report.written == 1 and len(report.skipped) == 1


def test_missing_column_names_it_and_the_schema(tmp_path):
    columns = [c for c in CSV_COLUMNS if c != "test_weights"]
    path = write_rows(tmp_path / "t.csv", [good_row()], columns)
    for mode in ("strict", "lenient"):  # nothing can be read from such a file in either mode
        with pytest.raises(TaskFormatError) as err:
            load_tasks(path, mode, progress=False)
        assert_names(err, "t.csv", "test_weights", "missing from the header")


@pytest.mark.parametrize(
    "changes, column, problem",
    [
        ({"test_weights": "{not json"}, "test_weights", "invalid JSON"),
        ({"test_weights": "[1, 2]"}, "test_weights", "expected a JSON object"),
        ({"additional_files": "{oops"}, "additional_files", "invalid JSON"),
        ({"additional_files": '{"a.txt": 3}'}, "additional_files", "neither text nor"),
        (
            {"additional_files": '{"a.bin": {"base64": "%%%"}}'},
            "additional_files",
            "neither text nor",
        ),
        ({"additional_files": '{"../x": ""}'}, "additional_files", "relative"),
        ({"prompt": "   \n"}, "prompt", "instruction is empty"),
        ({"dockerfile": "RUN apt-get update\n"}, "dockerfile", "no FROM"),
        ({"difficulty": "trivial"}, "difficulty", "Input should be"),
        ({"task_id": "Has Spaces"}, "task_id", "whitespace"),
        ({"tags": "ok| padded"}, "tags", "padded"),
    ],
)
def test_malformed_row_error_names_file_row_and_column(tmp_path, changes, column, problem):
    path = write_rows(tmp_path / "t.csv", [good_row("first"), good_row("second", **changes)])
    with pytest.raises(TaskFormatError) as err:
        load_tasks(path, "strict", progress=False)
    assert_names(err, "t.csv row 2 (task_id", column, problem)
    tasks, report = load_tasks(path, "lenient", progress=False)
    assert [t.id for t in tasks] == ["first"] and len(report.skipped) == 1


@pytest.mark.parametrize(
    "weights, problem, kept",
    [
        ('{"test_one": "heavy"}', "not a number", {}),
        ('{"test_three": 1}', "do not exist", {}),
        ('{"test_one": 0, "test_two": 0}', "positive", {}),
    ],
)
def test_bad_weights_stop_strict_and_are_dropped_with_a_warning_when_lenient(
    tmp_path, weights, problem, kept
):
    rows = [good_row("first"), good_row("second", test_weights=weights)]
    path = write_rows(tmp_path / "t.csv", rows)
    with pytest.raises(TaskFormatError) as err:
        load_tasks(path, "strict", progress=False)
    assert_names(err, "t.csv row 2 (task_id", "test_weights", problem)
    tasks, report = load_tasks(path, "lenient", progress=False)
    assert [t.id for t in tasks] == ["first", "second"] and not report.skipped
    assert tasks[1].tests.weights == kept  # nothing usable left: every test weighs the same
    assert report.warnings and all(
        "row 2" in w.location and w.field == "test_weights" for w in report.warnings
    )
    assert "every test weighs the same" in report.warnings[-1].problem


def test_non_utf8_bytes_name_the_row_and_column(tmp_path):
    path = write_rows(
        tmp_path / "t.csv", [good_row("first"), good_row("second", title="caf\u00e9")]
    )
    path.write_bytes(path.read_bytes().replace("caf\u00e9".encode(), b"caf\xe9"))  # Latin-1 byte
    tasks, report = load_tasks(path, "lenient", progress=False)
    assert [t.id for t in tasks] == ["first"]
    assert_names(report.skipped[0], "row 2 (task_id second)", "title", "not UTF-8")


def test_duplicate_ids_strict_stops_lenient_keeps_first(tmp_path):
    path = write_rows(
        tmp_path / "t.csv", [good_row("same"), good_row("other"), good_row("same", title="2nd")]
    )
    with pytest.raises(TaskFormatError) as err:
        load_tasks(path, "strict", progress=False)
    assert_names(err, "row 3", "id", "duplicate task id 'same' (first at")
    tasks, report = load_tasks(path, "lenient", progress=False)
    assert [(t.id, t.title) for t in tasks] == [("same", "T"), ("other", "T")]
    assert len(report.skipped) == 1


def test_ragged_row_is_reported(tmp_path):
    path = write_rows(tmp_path / "t.csv", [good_row()])
    path.write_text(path.read_text() + "only,three,fields\n")
    tasks, report = load_tasks(path, "lenient", progress=False)
    assert len(tasks) == 1
    assert_names(report.skipped[0], "row 2", "row", "different number of fields")


def test_extra_columns_are_kept_in_metadata(tmp_path):
    path = write_rows(
        tmp_path / "t.csv", [{**good_row(), "source": "synth-v2"}], [*CSV_COLUMNS, "source"]
    )
    [task] = load_tasks(path, progress=False).tasks
    assert task.metadata == {"source": "synth-v2"}
