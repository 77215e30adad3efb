"""`tbrl agent` commands (the group is mounted by the top-level CLI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tbrl_lib.agent.cli import app
from tests.conftest import REPO


def test_prompt_and_parse_commands(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["prompt"])
    assert result.exit_code == 0 and "<finish>" in result.output
    reply = tmp_path / "reply.txt"
    reply.write_text("<bash>\ncmd: ls\n</bash>")
    result = runner.invoke(app, ["parse", str(reply)])
    assert result.exit_code == 0 and json.loads(result.output) == {
        "tag": "bash",
        "fields": {"cmd": "ls", "block": True},
    }
    result = runner.invoke(app, ["parse", "-"], input="<bsh>\ncmd: ls\n</bsh>")
    assert result.exit_code == 1 and "did you mean 'bash'" in result.output


@pytest.mark.docker
def test_run_command_oracle_on_a_bundled_task(base_image, tmp_path):
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(
        app, ["run", str(REPO / "data/tasks"), "--task-id", "word-frequency", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (
        "word-frequency: finished" in result.output
        and "tests 1.000" in result.output
        and "judge" in result.output
    )
    assert out.exists()


TB1 = REPO / "tests/tasks/fixtures/third_party/tb1"
TB2 = REPO / "tests/tasks/fixtures/third_party/tb2"


@pytest.mark.docker
def test_run_reads_loosely_written_tasks_only_with_lenient(base_image, tmp_path, tbrl):
    """The TB1 example's weights (a number as text, keys without `test_`) are refused, naming
    the option; with `--lenient` each change is printed and the oracle solves the task."""
    out = tmp_path / "t.jsonl"
    refused = tbrl("agent", "run", TB1, "--judge", "none", "--out", out)
    assert refused.code == 1 and "--lenient" in refused.err.split("\r")[-1]
    result = tbrl("agent", "run", TB1, "--lenient", "--judge", "none", "--out", out)
    assert result.code == 0, result.err
    assert "changed while reading leniently" in result.out
    assert "hello-world: finished" in result.out and "tests 1.000" in result.out


@pytest.mark.docker
@pytest.mark.slow
def test_run_says_a_task_that_does_not_build_is_the_tasks_defect(base_image, tmp_path, tbrl):
    args = ("agent", "run", TB2, "--task-id", "broken-test-deps", "--judge", "none")
    result = tbrl(*args, "--out", tmp_path / "t.jsonl")
    assert result.code == 1 and "infrastructure" not in result.err
    assert "broken-test-deps: the task cannot run here, not scored: " in result.err
    assert "No matching distribution found for iniconfig==9.0.0" in result.err
