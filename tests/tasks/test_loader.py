"""Format detection, conversion between formats, and the guards around writing."""

from __future__ import annotations

import csv

import pytest

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.tasks import TaskFormatError, convert, detect_format, load_tasks, write_tasks
from tbrl_lib.tasks.harbor_format import write_harbor_dir
from tbrl_lib.tasks.tb1_format import write_tb1_dir

from .helpers import assert_names, make_task


def test_detects_every_format(tmp_path):
    task = make_task()
    write_tasks([task], "csv", tmp_path / "t.csv", progress=False)
    write_tasks(
        [task], "parquet", tmp_path / "t.parquet", progress=False, prompt_fn=initial_messages
    )
    harbor = write_harbor_dir(task, tmp_path / "h")
    tb1 = write_tb1_dir(task, tmp_path / "t")
    assert [
        detect_format(p)
        for p in (tmp_path / "t.csv", tmp_path / "t.parquet", harbor, tb1, tmp_path / "h")
    ] == ["csv", "parquet", "harbor", "tb1", "collection"]
    for path in (
        tmp_path / "t.csv",
        tmp_path / "t.parquet",
        harbor,
        tb1,
        tmp_path / "h",
        tmp_path / "t",
    ):
        [back] = load_tasks(path, progress=False).tasks
        assert back.id == task.id


def test_unknown_or_missing_path(tmp_path):
    (tmp_path / "tasks.json").write_text("{}")
    with pytest.raises(TaskFormatError) as err:
        detect_format(tmp_path / "tasks.json")
    assert_names(err, "tasks.json", "file", "unknown task file type")
    with pytest.raises(TaskFormatError) as err:
        load_tasks(tmp_path / "nope", progress=False)
    assert_names(err, "nope", "path", "does not exist")


def test_mixed_collection_of_tb1_and_harbor_dirs(tmp_path):
    write_harbor_dir(make_task(id="one"), tmp_path)
    write_tb1_dir(make_task(id="two"), tmp_path)
    tasks = load_tasks(tmp_path, progress=False).tasks
    assert [(t.id, t.provenance.source_format) for t in tasks] == [
        ("one", "harbor"),
        ("two", "tb1"),
    ]


def test_convert_chain_csv_tb1_harbor_parquet(tmp_path):
    tasks = [
        make_task(id=f"t{i}", solution=None, tests={"pytest": "def test_a():\n    pass\n"})
        for i in range(3)
    ]
    write_tasks(tasks, "csv", tmp_path / "a.csv", progress=False)
    convert(tmp_path / "a.csv", "tb1", tmp_path / "tb1", progress=False)
    convert(tmp_path / "tb1", "harbor", tmp_path / "harbor", progress=False)
    load_report, write_report = convert(
        tmp_path / "harbor",
        "parquet",
        tmp_path / "b.parquet",
        progress=False,
        prompt_fn=initial_messages,
    )
    assert load_report.loaded == 3 and write_report.written == 3
    from tbrl_lib.tasks.csv_format import csv_projection

    back = load_tasks(tmp_path / "b.parquet", progress=False).tasks
    assert all(b.same_task(csv_projection(t)) for b, t in zip(back, tasks))


def test_rewrite_replaces_task_dir_and_drops_stale_files(tmp_path):
    write_tasks([make_task()], "harbor", tmp_path, progress=False)
    (tmp_path / "demo-task/environment/stale.txt").write_text("old")
    write_tasks([make_task()], "harbor", tmp_path, progress=False)
    assert not (tmp_path / "demo-task/environment/stale.txt").exists()


def test_refuses_to_overwrite_a_directory_that_is_not_a_task(tmp_path):
    (tmp_path / "demo-task").mkdir()
    (tmp_path / "demo-task/precious.txt").write_text("keep me")
    with pytest.raises(TaskFormatError) as err:
        write_tasks([make_task()], "tb1", tmp_path, progress=False)
    assert_names(err, "demo-task", "directory", "not a task directory")
    assert (tmp_path / "demo-task/precious.txt").read_text() == "keep me"


def test_duplicate_ids_on_write(tmp_path):
    with pytest.raises(TaskFormatError) as err:
        write_tasks([make_task(), make_task()], "harbor", tmp_path, progress=False)
    assert_names(err, "demo-task", "id", "duplicate")
    report = write_tasks(
        [make_task(), make_task()], "harbor", tmp_path, mode="lenient", progress=False
    )
    assert report.written == 1 and len(report.skipped) == 1


def test_bad_mode_and_format(tmp_path):
    with pytest.raises(ValueError, match="strict"):
        load_tasks(tmp_path, "loose", progress=False)
    with pytest.raises(
        ValueError, match="unknown format .json.; use one of harbor, tb1, csv, parquet"
    ):
        write_tasks([], "json", tmp_path / "x", progress=False)


NO_TESTS = "import os\n\n\ndef helper():\n    assert os.path.exists('/app')\n"


def test_a_test_file_without_test_functions_is_a_load_error_naming_task_and_file(tmp_path):
    # it used to load silently and every trial scored `unresolved`
    write_harbor_dir(make_task(id="no-tests", tests={"pytest": PYTEST_ONE}), tmp_path / "h")
    (tmp_path / "h" / "no-tests" / "tests" / "test_outputs.py").write_text(NO_TESTS)
    with pytest.raises(TaskFormatError) as err:
        load_tasks(tmp_path / "h", progress=False)
    assert_names(err, "no-tests", "tests/test_outputs.py", "defines no test functions")
    assert "def test_" in err.value.fix
    # the same in the upstream CSV schema: the row, the task id and the column
    write_tasks(
        [make_task(id="no-tests", tests={"pytest": PYTEST_ONE})],
        "csv",
        tmp_path / "t.csv",
        progress=False,
    )
    with open(tmp_path / "t.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rows[0]["test_functions"] = NO_TESTS
    with open(tmp_path / "t.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(TaskFormatError) as err:
        load_tasks(tmp_path / "t.csv", progress=False)
    assert_names(err, "row 1 (task_id no-tests)", "test_functions", "defines no test functions")


PYTEST_ONE = "def test_one():\n    assert True\n"
