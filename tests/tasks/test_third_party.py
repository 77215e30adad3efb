"""Tasks written by others: ids as the formats allow them (upper case), binary data files
carried byte-exact through every format, TB1 weights files read leniently with every change
reported, and error text that survives rich's markup. Fixtures in fixtures/third_party are
written the way such datasets are (see make_binaries.py for the binary files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.tasks import TaskFormatError, load_tasks, write_tasks
from tbrl_lib.tasks.console import skipped_table
from tbrl_lib.tasks.csv_format import csv_projection
from tbrl_lib.tasks.model import DOCKER_SAFE_ID, MAX_BINARY_BYTES, Environment, safe_task_id

from .helpers import assert_names, make_task

FIXTURES = Path(__file__).parent / "fixtures" / "third_party"
HARBOR = FIXTURES / "harbor"
HELLO = FIXTURES / "tb1" / "hello-world"
PARQUET = HARBOR / "R_package_Summary-Stats" / "environment" / "data" / "sales.parquet"
FILE_SUFFIX = {"csv": "tasks.csv", "parquet": "tasks.parquet"}


@pytest.fixture(scope="module")
def harbor_tasks():
    tasks, report = load_tasks(HARBOR, "strict", progress=False)
    assert report.ok and not report.warnings
    return {task.id: task for task in tasks}


def test_upper_case_id_loads_and_maps_to_a_docker_safe_id(harbor_tasks):
    task = harbor_tasks["R_package_Summary-Stats"]
    assert DOCKER_SAFE_ID.match(task.safe_id) and task.safe_id.startswith(
        "r-package-summary-stats-"
    )
    assert safe_task_id("r_package_summary-stats") != task.safe_id  # case matters: no collision
    assert (
        harbor_tasks["py313-dated-logs"].safe_id == "py313-dated-logs"
    )  # safe ids stay as they are
    assert make_task(id="count-error-lines").safe_id == "count-error-lines"


@pytest.mark.parametrize(
    "bad, problem",
    [
        ("has space", "whitespace"),
        (".hidden", "starts with '.'"),
        ("a/b", "path separator"),
        ("x" * 201, "1-200"),
    ],
)
def test_ids_no_directory_could_carry_are_still_refused(bad, problem):
    with pytest.raises(ValueError, match=problem):
        make_task(id=bad)


def test_binary_data_files_load_byte_exact(harbor_tasks):
    data = harbor_tasks["R_package_Summary-Stats"].environment.binary_files["data/sales.parquet"]
    assert data == PARQUET.read_bytes() and data[:4] == b"PAR1"
    assert "data/logs.tar.gz" in harbor_tasks["py313-dated-logs"].environment.binary_files


@pytest.mark.parametrize("fmt", ["tb1", "harbor", "csv", "parquet"])
def test_binary_files_and_original_ids_survive_every_format(harbor_tasks, fmt, tmp_path):
    tasks = list(harbor_tasks.values())
    out = tmp_path / FILE_SUFFIX.get(fmt, fmt)
    write_tasks(tasks, fmt, out, progress=False, prompt_fn=initial_messages)
    back, report = load_tasks(out, "strict", progress=False)
    assert report.ok
    for before, after in zip(tasks, back):
        assert after.id == before.id  # the original id, not the safe one
        assert after.environment.binary_files == before.environment.binary_files  # byte-exact
        assert after.same_task(csv_projection(before) if fmt == "csv" else before)
    if fmt in ("tb1", "harbor"):
        assert (out / "R_package_Summary-Stats").is_dir()


def test_a_chain_of_conversions_keeps_the_bytes(harbor_tasks, tmp_path):
    tasks = list(harbor_tasks.values())
    source = tmp_path / "start"
    write_tasks(tasks, "harbor", source, progress=False)
    for step, fmt in enumerate(["csv", "parquet", "tb1", "harbor"]):
        target = tmp_path / f"{step}" / FILE_SUFFIX.get(fmt, fmt)
        write_tasks(
            load_tasks(source, progress=False).tasks,
            fmt,
            target,
            progress=False,
            prompt_fn=initial_messages,
        )
        source = target
    copied = source / "R_package_Summary-Stats" / "environment" / "data" / "sales.parquet"
    assert copied.read_bytes() == PARQUET.read_bytes()


def test_binary_files_over_the_cap_are_a_clear_error(tmp_path):
    write_tasks([make_task(id="Big_Data")], "harbor", tmp_path, progress=False)
    task_dir = tmp_path / "Big_Data"
    with open(task_dir / "environment" / "huge.bin", "wb") as fh:  # sparse: nothing is read
        fh.truncate(MAX_BINARY_BYTES + 1)
    with pytest.raises(TaskFormatError) as err:
        load_tasks(task_dir, progress=False)
    assert_names(err, "Big_Data", "environment", "MiB a task may carry (largest: huge.bin")
    assert "Dockerfile" in err.value.fix
    with pytest.raises(ValueError, match="over the cap"):
        Environment(dockerfile="FROM x\n", binary_files={"a.bin": b"\xff" * (MAX_BINARY_BYTES + 1)})


def test_binary_content_that_is_text_belongs_in_files():
    with pytest.raises(ValueError, match="is UTF-8 text; put it in `files`"):
        Environment(dockerfile="FROM x\n", binary_files={"a.txt": b"plain"})


def test_tb1_weight_variants_strict_refuses_with_the_way_out():
    with pytest.raises(TaskFormatError) as err:
        load_tasks(HELLO, "strict", progress=False)
    assert_names(err, "hello-world", "test_weights.json", "is '0.6', not a number")
    assert "--lenient" in err.value.fix


def test_tb1_weight_variants_lenient_maps_or_reports_every_entry():
    (task,), report = load_tasks(HELLO, "lenient", progress=False)
    assert task.tests.weights == {"test_hello_file_exists": 0.4, "test_hello_file_content": 0.6}
    problems = [w.problem for w in report.warnings]
    source = json.loads((HELLO / "test_weights.json").read_text())
    for key in source:  # never silently dropped: each entry is kept or named in a warning
        assert any(repr(key) in problem for problem in problems), key
    assert any(
        "dropped 'test_goodbye_file'" in p and "names no test function" in p for p in problems
    )
    assert any("dropped '_comment'" in p for p in problems)
    assert all(w.location.endswith("hello-world") and w.fix for w in report.warnings)


def test_lenient_weights_of_a_written_task_read_back_strictly(tmp_path):
    tasks, _ = load_tasks(HELLO, "lenient", progress=False)
    write_tasks(tasks, "tb1", tmp_path, progress=False)
    (again,), report = load_tasks(tmp_path / "hello-world", "strict", progress=False)
    assert report.ok and not report.warnings and again.tests.weights == tasks[0].tests.weights


def test_rich_tables_print_error_text_as_written():
    pattern = "'^[a-z0-9][a-z0-9._-]{0,127}$'"
    error = TaskFormatError(
        "tasks/[bold]x", "directory name", f"does not match {pattern}", "rename it to match [a-z]"
    )
    screen = Console(record=True, width=400)
    screen.print(skipped_table("skipped", [error]))
    text = screen.export_text()
    assert pattern in text and "tasks/[bold]x" in text and "[a-z]" in text
