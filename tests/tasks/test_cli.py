"""`tbrl tasks convert` and `tbrl tasks stats` through the real typer app."""

from __future__ import annotations

from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.tasks import load_tasks, write_tasks

from .helpers import make_task

runner = CliRunner()


def test_convert_csv_to_harbor_then_stats(tmp_path):
    write_tasks([make_task(id="a"), make_task(id="b")], "csv", tmp_path / "t.csv", progress=False)
    result = runner.invoke(app, ["tasks", "convert", str(tmp_path / "t.csv"), "--to", "harbor", str(tmp_path / "h")])
    assert result.exit_code == 0, result.output
    assert "read 2 task(s)" in result.output and "wrote 2" in result.output
    assert [t.id for t in load_tasks(tmp_path / "h", progress=False).tasks] == ["a", "b"]
    result = runner.invoke(app, ["tasks", "stats", str(tmp_path / "h")])
    assert result.exit_code == 0 and "by difficulty" in result.output and "tbrl/base:trixie" in result.output


def test_convert_reports_dropped_fields(tmp_path):
    write_tasks([make_task()], "harbor", tmp_path / "h", progress=False)
    result = runner.invoke(app, ["tasks", "convert", str(tmp_path / "h"), "--to", "csv", str(tmp_path / "x.csv")])
    assert result.exit_code == 0 and "lost fields this format cannot hold" in result.output
    assert "solution" in result.output


def test_strict_error_exits_1_and_lenient_lists_skips(tmp_path):
    for name in ("good", "bad"):
        write_tasks([make_task(id=name)], "harbor", tmp_path / "h", progress=False)
    (tmp_path / "h/bad/environment/Dockerfile").write_text("RUN true\n")
    result = runner.invoke(app, ["tasks", "convert", str(tmp_path / "h"), "--to", "tb1", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "environment/Dockerfile" in result.output and "FROM" in result.output and "fix:" in result.output
    result = runner.invoke(app, ["tasks", "convert", str(tmp_path / "h"), "--to", "tb1", str(tmp_path / "o"),
                                 "--lenient"])
    assert result.exit_code == 0 and "skipped while reading (1)" in result.output
    assert [t.id for t in load_tasks(tmp_path / "o", progress=False).tasks] == ["good"]


def test_unknown_target_format_is_rejected(tmp_path):
    result = runner.invoke(app, ["tasks", "convert", str(tmp_path), "--to", "json", str(tmp_path / "o")])
    assert result.exit_code == 2
