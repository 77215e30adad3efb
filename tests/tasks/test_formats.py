"""The format registry: a new format is its module plus one line in `FORMATS`, and the
loader, the export and the command's choices follow from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbrl_lib.cli.tasks import FormatName
from tbrl_lib.synth.report import export_all
from tbrl_lib.tasks import TaskFormatError, convert, detect_format, load_tasks, write_tasks
from tbrl_lib.tasks.formats import FORMATS, FileFormat
from tbrl_lib.tasks.model import Task

from .helpers import make_task


def _read_jsonl(path: Path, lenient: bool) -> list[Task | TaskFormatError]:
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            rows.append(Task.model_validate_json(line))
        except ValueError as exc:
            rows.append(TaskFormatError(f"{path} line {number}", "line", str(exc)[:80], "fix it"))
    return rows


def _write_jsonl(rows: list, path: Path) -> None:
    path.write_text("".join(row + "\n" for row in rows))


JSONL = FileFormat(
    "jsonl", (".jsonl",), _read_jsonl, lambda task, _: task.model_dump_json(), _write_jsonl
)


@pytest.fixture
def jsonl_registered(monkeypatch):
    """A throw-away format registered the way a new one is: one entry in `FORMATS`."""
    monkeypatch.setitem(FORMATS, JSONL.name, JSONL)


def test_a_registered_format_is_detected_read_written_and_exported(jsonl_registered, tmp_path):
    tasks = [make_task(id="alpha"), make_task(id="beta")]
    # written and read back through the loader, by name and by detection
    load_report, write_report = convert(
        _harbor_source(tasks, tmp_path), "jsonl", tmp_path / "out.jsonl", progress=False
    )
    assert (load_report.loaded, write_report.written) == (2, 2)
    assert detect_format(tmp_path / "out.jsonl") == "jsonl"
    back = load_tasks(tmp_path / "out.jsonl", progress=False).tasks
    assert [t.id for t in back] == ["alpha", "beta"]
    assert all(b.same_task(t) for b, t in zip(back, tasks))
    # a bad row is skipped leniently, named strictly
    (tmp_path / "bad.jsonl").write_text(tasks[0].model_dump_json() + "\n{not json\n")
    lenient = load_tasks(tmp_path / "bad.jsonl", "lenient", progress=False)
    assert len(lenient.tasks) == 1 and "line 2" in str(lenient.report.skipped[0])
    with pytest.raises(TaskFormatError, match="line 2"):
        load_tasks(tmp_path / "bad.jsonl", progress=False)
    # the synthetic-data export writes every registered format
    written = export_all(tasks, tmp_path / "export", prompt_fn=lambda t: [])
    assert "jsonl" in written and Path(written["jsonl"]).name == "tasks.jsonl"
    assert len(load_tasks(written["jsonl"], progress=False).tasks) == 2


def test_unknown_suffix_names_the_registered_ones(jsonl_registered, tmp_path):
    (tmp_path / "tasks.json").write_text("{}")
    with pytest.raises(TaskFormatError, match=r"\.jsonl") as err:
        detect_format(tmp_path / "tasks.json")
    assert ".csv" in str(err.value) and ".parquet" in str(err.value)


def test_the_commands_choices_are_the_registry():
    assert [choice.value for choice in FormatName] == list(FORMATS)


def _harbor_source(tasks: list[Task], tmp_path: Path) -> Path:
    write_tasks(tasks, "harbor", tmp_path / "src", progress=False)
    return tmp_path / "src"


def test_registry_round_trip_of_every_builtin_format(tmp_path):
    """Every registered format writes and reads back one task (the parquet one with a
    prompt function), as `export_all` relies on."""
    task = make_task()
    written = export_all([task], tmp_path, prompt_fn=lambda t: [{"role": "user", "content": "x"}])
    assert sorted(written) == sorted(FORMATS)
    for name, path in written.items():
        [back] = load_tasks(path, progress=False).tasks
        assert back.id == task.id, name
