"""`tbrl agent` commands (the group is mounted by the top-level CLI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tbrl_lib.cli.agent import app
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
