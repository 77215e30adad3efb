"""The `tbrl` command mounts every group and its demo parses parameters strictly."""

from __future__ import annotations

from typer.testing import CliRunner

from tbrl_lib.cli import app

runner = CliRunner()


def test_help_lists_every_group():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for group in ("images", "docker", "tasks", "judge", "eval", "doctor", "setup", "demo"):
        assert group in result.output


def test_demo_rejects_a_parameter_without_equals():
    result = runner.invoke(app, ["demo", "-p", "preset"])
    assert result.exit_code != 0
    assert "KEY=VALUE" in result.output


def test_demo_names_the_notebooks_when_one_is_unknown():
    result = runner.invoke(app, ["demo", "--notebook", "nope"])
    assert result.exit_code != 0
    assert "04_train" in str(result.exception)
