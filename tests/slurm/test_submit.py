"""The generated job.sbatch against a real Slurm of 4 nodes x 8 fake GPUs (`conftest.py`):
every GPU preset's job passes `sbatch --test-only` (Slurm's own check of the nodes, GPUs and
options, nothing run), an impossible one is refused at submit and never queued, and `tbrl
doctor` shows the allocation it runs in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tbrl_lib.train.config.presets import load_preset, preset_names

pytestmark = [pytest.mark.slurm]
ROOT = Path(__file__).resolve().parents[2]
GPU_PRESETS = [name for name in preset_names() if not load_preset(name).launch.cpu]


def launch(preset: str, out: Path, *sets: str) -> Path:
    """`tbrl train launch PRESET` into `out`; its job.sbatch."""
    args = [sys.executable, "-m", "tbrl_lib.cli", "train", "launch", preset, "--out", str(out)]
    args += ["--run-dir", str(out / "run-{job}"), *(a for s in sets for a in ("--set", s))]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out / "job.sbatch"


@pytest.mark.parametrize("preset", GPU_PRESETS)
def test_every_gpu_preset_job_passes_sbatch_test_only(slurm, preset, tmp_path):
    script = launch(preset, tmp_path)
    checked = slurm.run("sbatch", "--test-only", str(script))
    assert checked.returncode == 0, checked.stderr
    assert "to start at" in checked.stderr and "in partition test" in checked.stderr
    nodes = load_preset(preset).launch.num_nodes + load_preset(preset).launch.vllm_server_nodes
    assert f"on nodes n[0-{nodes - 1}]" in checked.stderr or (
        nodes == 1 and "on nodes n0" in checked.stderr
    )


def test_an_impossible_request_is_refused_at_submit(slurm, tmp_path):
    """8 training nodes + the server's: more than the partition's 4. Refused by sbatch
    itself (EnforcePartLimits), nothing left pending."""
    script = launch("32xh100", tmp_path, "launch.num_nodes=8")
    refused = slurm.run("sbatch", str(script))
    assert refused.returncode != 0 and "Batch job submission failed" in refused.stderr
    assert slurm.run("squeue", "-h").stdout.strip() == ""


def test_doctor_shows_the_allocation_it_runs_in(slurm):
    doctor = [sys.executable, "-m", "tbrl_lib.cli", "doctor"]
    wide = {**slurm.env, "COLUMNS": "250"}  # one table row per line
    done = slurm.run("salloc", "-N2", "--gpus-per-node=8", *doctor, timeout=120, cwd=ROOT, env=wide)
    row = next((line for line in done.stdout.splitlines() if "slurm" in line), "")
    assert "2 node(s) (n0, n1) x 8 GPU(s)" in row, done.stdout[-3000:] + done.stderr[-2000:]


def test_an_allocation_too_small_for_the_preset_is_named_in_one_line(slurm):
    check = (
        "from tbrl_lib.train.config.presets import load_preset\n"
        "from tbrl_lib.train.job.placement import require_runnable\n"
        "require_runnable(load_preset('cpu-cluster'))"
    )
    done = slurm.run("salloc", "-N1", sys.executable, "-c", check, timeout=120, cwd=ROOT)
    assert done.returncode != 0
    assert "preset cpu-cluster needs 2 node(s); Slurm job " in done.stderr
    assert ": 1 node(s) (n0)" in done.stderr and "salloc -N2" in done.stderr
