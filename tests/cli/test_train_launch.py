"""`tbrl train plan/launch` take the preset positionally (as the README writes it) or with --preset;
every async preset's launch files are written and parse."""

from __future__ import annotations

import subprocess

import pytest
import yaml
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
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.plan.memory_plan import plan_memory

    c = load_preset("16xh100")
    assert c.launch.num_nodes + c.launch.vllm_server_nodes == 2 and c.launch.num_processes == 8
    assert plan_memory(c).fits
    listing = runner.invoke(app, ["presets"]).output
    assert "16xh100" in listing and "2x8 GPU" in listing
    assert "4x8 GPU" in listing  # 32xh100: 3 training nodes + 1 vLLM server node


ASYNC_LAUNCH = {
    # preset: (machines, processes, accelerate's distributed_type, `vllm serve` in the scripts)
    "1xh200-async": (1, 1, "NO", False),
    "8xh100-async": (1, 6, "DEEPSPEED", True),
    "16xh100-async": (1, 8, "DEEPSPEED", True),
    "32xh100-async": (3, 24, "DEEPSPEED", True),
}


@pytest.mark.parametrize("name", sorted(ASYNC_LAUNCH))
def test_async_presets_launch_files_are_written_and_parse(name, tmp_path):
    machines, processes, distributed, serves = ASYNC_LAUNCH[name]
    result = runner.invoke(app, ["launch", name, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in tmp_path.iterdir()} == {"accelerate.yaml", "commands.sh", "job.sbatch"}
    acc = yaml.safe_load((tmp_path / "accelerate.yaml").read_text())
    assert (acc["num_machines"], acc["num_processes"]) == (machines, processes)
    assert acc["distributed_type"] == distributed
    for script in ("commands.sh", "job.sbatch"):
        parsed = subprocess.run(["bash", "-n", str(tmp_path / script)], capture_output=True)
        assert parsed.returncode == 0, (script, parsed.stderr)
    commands = (tmp_path / "commands.sh").read_text()
    assert ("vllm serve Qwen/" in commands) == serves and f"--preset {name} " in commands
    assert f"-p preset {name} " in (tmp_path / "job.sbatch").read_text()  # notebook 04
    assert ("vllm_server:" in result.output) == serves
