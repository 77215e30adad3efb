"""scripts/gpu_check_grpo.py runs on a CPU with its --tiny flag (so the GPU run is known to start)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_gpu_check_runs_tiny_on_cpu(capsys):
    spec = importlib.util.spec_from_file_location(
        "gpu_check_grpo", REPO / "scripts" / "gpu_check_grpo.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (
        module.main(["--tiny", "--steps", "1", "--contexts", "192", "--num-generations", "2"]) == 0
    )
    out = capsys.readouterr().out
    assert "RESULT: OK" in out
    rows = [line for line in out.splitlines() if line.strip().startswith(("manual", "trl"))]
    assert len(rows) == 2  # both the reference update and TRL's GRPOTrainer ran


def test_synthetic_trajectory_alternates_assistant_and_env_tokens():
    spec = importlib.util.spec_from_file_location(
        "gpu_check_grpo", REPO / "scripts" / "gpu_check_grpo.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    prompt, completion, mask = module.synthetic_trajectory(4096, 1000, seed=1)
    assert len(prompt) + len(completion) == 4096 and len(mask) == len(completion)
    assert mask[0] == 1 and 0 in mask  # starts with an assistant turn, has observations
    ends = [i for i, t in enumerate(completion) if t == 1]
    assert ends and all(mask[i] == 1 for i in ends)  # every EOS is a model token
