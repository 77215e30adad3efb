"""`tbrl tasks convert` and `tbrl tasks stats` through the real typer app."""

from __future__ import annotations

from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.tasks import load_tasks, write_tasks
from tests.tasks.helpers import make_task

runner = CliRunner()


def test_convert_csv_to_harbor_then_stats(tmp_path):
    write_tasks([make_task(id="a"), make_task(id="b")], "csv", tmp_path / "t.csv", progress=False)
    result = runner.invoke(
        app, ["tasks", "convert", str(tmp_path / "t.csv"), "--to", "harbor", str(tmp_path / "h")]
    )
    assert result.exit_code == 0, result.output
    assert "read 2 task(s)" in result.output and "wrote 2" in result.output
    assert [t.id for t in load_tasks(tmp_path / "h", progress=False).tasks] == ["a", "b"]
    result = runner.invoke(app, ["tasks", "stats", str(tmp_path / "h")])
    assert (
        result.exit_code == 0
        and "by difficulty" in result.output
        and "tbrl/base:trixie" in result.output
    )


def test_convert_reports_dropped_fields(tmp_path):
    write_tasks([make_task()], "harbor", tmp_path / "h", progress=False)
    result = runner.invoke(
        app, ["tasks", "convert", str(tmp_path / "h"), "--to", "csv", str(tmp_path / "x.csv")]
    )
    assert result.exit_code == 0 and "lost fields this format cannot hold" in result.output
    assert "solution" in result.output


def test_strict_error_exits_1_and_lenient_lists_skips(tmp_path, tbrl):
    for name in ("good", "bad"):
        write_tasks([make_task(id=name)], "harbor", tmp_path / "h", progress=False)
    (tmp_path / "h/bad/environment/Dockerfile").write_text("RUN true\n")
    result = tbrl("tasks", "convert", tmp_path / "h", "--to", "tb1", tmp_path / "o")
    assert result.code == 1 and len(result.err.strip().splitlines()[-1:]) == 1
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "bad" in line and "environment/Dockerfile" in line
    assert "FROM" in line and "Fix:" in line
    result = runner.invoke(
        app,
        ["tasks", "convert", str(tmp_path / "h"), "--to", "tb1", str(tmp_path / "o"), "--lenient"],
    )
    assert result.exit_code == 0 and "skipped while reading (1)" in result.output
    assert [t.id for t in load_tasks(tmp_path / "o", progress=False).tasks] == ["good"]


def test_unknown_target_format_is_rejected(tmp_path):
    result = runner.invoke(
        app, ["tasks", "convert", str(tmp_path), "--to", "json", str(tmp_path / "o")]
    )
    assert result.exit_code == 2


def test_lenient_convert_with_no_loadable_task_writes_nothing_and_says_why(tmp_path, tbrl):
    write_tasks([make_task(id="bad")], "harbor", tmp_path / "h", progress=False)
    (tmp_path / "h/bad/environment/Dockerfile").write_text("RUN true\n")
    for fmt, out in (("tb1", tmp_path / "o"), ("csv", tmp_path / "o.csv")):
        result = tbrl("tasks", "convert", tmp_path / "h", "--to", fmt, out, "--lenient")
        assert result.code == 1, fmt
        line = result.err.strip().splitlines()[-1]
        assert "none of its 1 task(s) could be read" in line and "nothing written" in line
        assert "environment/Dockerfile" in line  # the first reason, on the same line
        assert not out.exists(), f"{fmt}: an empty {out.name} was left behind"
