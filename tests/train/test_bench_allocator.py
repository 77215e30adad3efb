"""benchmarks/bench_allocator.py on its smallest workload: `cpu-demo`'s SFT for 2 steps at
glibc's default threshold and at the 128 KiB that `train()` sets, each in its own process
(the measured table is in docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location(
    "bench_allocator", REPO / "benchmarks" / "bench_allocator.py"
)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.mark.slow
def test_the_fixed_threshold_costs_page_faults_not_arithmetic(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    default, fixed = bench.bench(["sft"], [0, 128 * 1024], sft_steps=2)
    assert (default["threshold"], fixed["threshold"]) == (0, 128 * 1024)
    assert default["steps"] == fixed["steps"] == 2
    # the same steps on the same rows: the allocator changes where memory lives, not the loss
    assert default["loss_after"] == fixed["loss_after"]
    # every block of 128 KiB or more is a fresh mapping, faulted in a page at a time
    assert fixed["minor_faults"] > 2 * default["minor_faults"], (default, fixed)
    assert default["over_resident_gib"] > 0 and fixed["over_resident_gib"] > 0
