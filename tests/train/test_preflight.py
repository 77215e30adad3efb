"""Preflight: a preset that cannot run here is refused in seconds, before anything is built.

No GPU exists here; `TBRL_FAKE_GPUS` (documented in preflight.py) fakes only what torch reports.
"In seconds" is counted in the refusing process's CPU time, not wall time: on a loaded machine
(a training run beside the suite) starting Python alone took over 15 s of wall time.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.preflight import preflight

REPO = Path(__file__).resolve().parents[2]
REFUSAL_CPU_S = 15
"""The CPU seconds a refusal may take: imports and the checks, no model, no sandbox."""


def run_timed(command: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float]:
    """`command`'s result (run in the repository) and the CPU seconds it and its children
    used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_cpu_smoke_passes_here(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert preflight(load_preset("cpu-smoke")) == []


def test_32xh100_names_what_is_missing(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("VLLM_HOST", raising=False)
    problems = "\n".join(preflight(load_preset("32xh100")))
    assert "world size 1" in problems and "24 training processes" in problems
    assert "VLLM_HOST" in problems
    assert "Qwen/Qwen3-32B" in problems


def test_world_size_and_fake_gpus(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WORLD_SIZE", "1")  # 2xa100: 1 trainer + 1 vLLM server GPU on one node
    monkeypatch.setenv("TBRL_FAKE_GPUS", "2:80")
    problems = preflight(load_preset("2xa100"))
    assert not any("world size" in p or "GPU" in p for p in problems), problems
    monkeypatch.setenv("TBRL_FAKE_GPUS", "1:40")
    problems = "\n".join(preflight(load_preset("2xa100")))
    assert "1 GPU(s) visible, the preset needs 2" in problems


def test_cli_refuses_32xh100_fast_without_traceback(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("WORLD_SIZE", None)
    command = ["train", "run", "--preset", "32xh100", "--out", str(tmp_path / "run")]
    proc, cpu_s = run_timed([str(Path(sys.executable).parent / "tbrl"), *command], env)
    assert proc.returncode != 0
    assert cpu_s < REFUSAL_CPU_S, cpu_s
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "cannot run here" in proc.stderr and "tbrl train launch" in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_notebook_refuses_32xh100_fast_and_builds_nothing(tmp_path):
    """papermill's own CLI prints its wrapper traceback; the notebook cell's error is the short refusal."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("WORLD_SIZE", None)
    run = tmp_path / "run"
    notebook, out = str(REPO / "notebooks/04_train.ipynb"), str(tmp_path / "out.ipynb")
    parameters = ["-p", "preset", "32xh100", "-p", "out_dir", str(run), "--cwd", str(REPO)]
    papermill = str(Path(sys.executable).parent / "papermill")
    proc, cpu_s = run_timed([papermill, notebook, out, *parameters], env)
    assert proc.returncode != 0
    assert cpu_s < REFUSAL_CPU_S, cpu_s
    assert "SystemExit: preset 32xh100 runs 24 training process(es)" in proc.stdout + proc.stderr
    assert "submit it as a Slurm job" in proc.stdout + proc.stderr
    assert not run.exists()


def test_preflight_command_and_dry_run(monkeypatch):
    from typer.testing import CliRunner

    from tbrl_lib.cli.train import app

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    runner = CliRunner()
    ok = runner.invoke(app, ["preflight", "cpu-smoke"])
    assert ok.exit_code == 0 and "preflight ok" in ok.output
    bad = runner.invoke(app, ["preflight", "32xh100"])
    assert bad.exit_code == 2 and "cannot run here" in bad.output
    dry = runner.invoke(app, ["run", "--preset", "32xh100", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert (
        "preflight would refuse" in dry.output
        and "vllm serve Qwen/Qwen3-32B" in dry.output
        and "accelerate launch" in dry.output
    )
