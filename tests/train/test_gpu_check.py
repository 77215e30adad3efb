"""benchmarks/gpu_check.py, the one GPU check: its arithmetic (parameter count, 6N FLOPs, MFU)
and its refusal without CUDA, and a `--tiny` run on CPU of every variant it can run here (the
plain-update baseline, TRL's GRPOTrainer, LoRA through PEFT), so the GPU run is known to start;
the GPU numbers come from a GPU machine (docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gpu_check = load_script()


@pytest.mark.parametrize("size", ["0.6b", "1.7b", "8b", "tiny"])
def test_param_count_matches_the_model_transformers_builds(size):
    import torch

    shape = gpu_check.Shape.named(size)
    with torch.device("meta"):  # shapes only, no memory
        model = gpu_check.build_model(shape, torch.device("meta"), torch.bfloat16)
    assert gpu_check.param_count(shape) == sum(p.numel() for p in model.parameters())


def test_mfu_by_the_6n_rule():
    shape = gpu_check.Shape.named("1.7b")
    n = gpu_check.param_count(shape)
    assert 1.7e9 < n < 1.75e9  # Qwen3-1.7B, tied embedding counted once
    assert gpu_check.flops_per_token(shape, 32_768) == 6 * n
    # the last measured number (14.8k tokens/s on one H200 at 32k) is ~15% by this convention
    value = gpu_check.mfu(14_800, shape, 32_768, gpu_check.peak_tflops_of("NVIDIA H200"))
    assert value == pytest.approx(14_800 * 6 * n / 989e12)
    assert 0.15 < value < 0.16
    with_attn = gpu_check.mfu(14_800, shape, 32_768, 989.0, attention=True)
    assert with_attn == pytest.approx(value + 14_800 * 12 * 28 * 16 * 128 * 32_768 / 989e12)
    assert gpu_check.peak_tflops_of("NVIDIA A100-SXM4-80GB") == 312.0
    assert gpu_check.peak_tflops_of("Some GPU") is None


def test_synthetic_trajectory_fills_the_context_with_alternating_turns():
    prompt, completion, mask = gpu_check.synthetic_trajectory(8192, 1000, seed=3)
    assert len(prompt) + len(completion) == 8192 and len(mask) == len(completion)
    assert mask[0] == 1 and 0 in mask
    assert all(mask[i] == 1 for i, t in enumerate(completion) if t == 1)  # EOS: model token


def test_refuses_without_cuda_in_one_line(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the refusal path does not apply")
    assert gpu_check.main([]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [
        "gpu_check: no CUDA GPU here (torch.cuda.is_available() is False); nothing measured"
    ]


@pytest.mark.slow
def test_tiny_run_on_cpu_times_the_plain_baseline_and_real_grpo_trainer_steps(capsys):
    assert gpu_check.main(["--tiny", "--steps", "1", "--num-generations", "2", "--lora"]) == 0
    out = capsys.readouterr().out
    assert "RESULT: OK" in out
    rows = {
        cells[0]: cells
        for line in out.splitlines()
        if "|" in line and (cells := [c.strip() for c in line.split("|")])[0] != "variant"
    }
    assert {"plain", "full", "lora-peft"} <= set(rows)
    assert rows["plain"][2] == "1" and rows["full"][2] == "2"  # trajectories per step
    assert all(float(row[-1]) > 0 for row in rows.values())  # gradient norms came out > 0
