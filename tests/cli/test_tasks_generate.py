"""`tbrl tasks generate`: writes loadable task dirs; bad options say what to use."""

from __future__ import annotations

from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.synth.generate import generate
from tbrl_lib.tasks import load_tasks


def test_generate_writes_harbor_dirs_that_load_back_unchanged(tmp_path):
    out = tmp_path / "tasks"
    result = CliRunner().invoke(
        app,
        [
            "tasks",
            "generate",
            "--family",
            "git_surgery,sqlite_report",
            "--n",
            "4",
            "--seed",
            "11",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 4 tasks as harbor" in result.output and "version-control" in result.output
    loaded = {t.id: t for t in load_tasks(out, progress=False).tasks}
    expected = generate("git_surgery,sqlite_report", 4, seed=11)
    assert sorted(loaded) == sorted(t.id for t in expected)
    assert all(loaded[t.id].same_task(t) for t in expected)


def test_generate_parquet(tmp_path):
    out = tmp_path / "tasks.parquet"
    result = CliRunner().invoke(
        app,
        ["tasks", "generate", "--n", "3", "--out", str(out), "--format", "parquet", "--no-balance"],
    )
    assert result.exit_code == 0, result.output
    assert len(load_tasks(out, progress=False).tasks) == 3


def test_unknown_family_names_the_choices(tmp_path):
    result = CliRunner().invoke(
        app, ["tasks", "generate", "--family", "astrology", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "unknown task family ['astrology']" in result.output and "log_analysis" in result.output
