"""`tbrl train plan/launch` take the preset positionally (as the README writes it) or with --preset."""

from __future__ import annotations

from typer.testing import CliRunner

from tbrl_lib.cli.train import app

runner = CliRunner()


def test_plan_positional_equals_option():
    a = runner.invoke(app, ["plan", "32xh100"])
    b = runner.invoke(app, ["plan", "--preset", "32xh100"])
    assert a.exit_code == b.exit_code == 0, a.output
    assert a.output == b.output
    assert "capacity 80" in a.output


def test_launch_positional_writes_files(tmp_path):
    result = runner.invoke(app, ["launch", "32xh100", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "accelerate.yaml").is_file() and (tmp_path / "commands.sh").is_file()
    commands = (tmp_path / "commands.sh").read_text()
    assert "vllm serve" in commands and "trl vllm-serve" not in commands


def test_16xh100_is_two_nodes_everywhere():
    from tbrl_lib.train.memory import plan_memory
    from tbrl_lib.train.presets import load_preset

    c = load_preset("16xh100")
    assert c.launch.num_nodes + c.launch.vllm_server_nodes == 2 and c.launch.num_processes == 8
    assert plan_memory(c).fits
    listing = runner.invoke(app, ["presets"]).output
    assert "16xh100" in listing and "2x8 GPU" in listing
    assert "4x8 GPU" in listing  # 32xh100: 3 training nodes + 1 vLLM server node
