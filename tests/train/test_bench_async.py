"""benchmarks/bench_async.py without training: a row from a finished run folder (step time,
the trainer's wait, staleness, the CPU busy share) and the CPU sampler's window (the measured
numbers are in docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import json
import time

import pytest

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("bench_async", REPO / "benchmarks" / "bench_async.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def run_folder(tmp_path, name: str, async_run: bool):
    folder = tmp_path / name
    folder.mkdir()
    lines = []
    for step in (1, 2):
        row = {"step": step, "train/step_time": 10.0}
        if async_run:
            row |= {"train/async/wait_s": 2.5, "train/async/staleness_mean": step - 1.0,
                    "train/async/stale_dropped_rollouts": 4.0 * (step - 1)}  # fmt: skip
        lines.append(json.dumps(row))
    (folder / "metrics.jsonl").write_text("\n".join(lines))
    summary = {
        "steps": 2,
        "rollouts": 64,
        "wall_seconds": 123.0,
        "reward_trend": {"rise": 0.3},
        "heldout": [{"model": "warm start", "solve_rate": 0.25}, {"model": "grpo", "solve_rate": 0.75}],
    }  # fmt: skip
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_a_row_reads_step_time_wait_staleness_drops_and_the_cpu_busy_share(tmp_path):
    folder = run_folder(tmp_path, "seed-0-async", async_run=True)
    (folder / "cpu_busy.json").write_text(json.dumps({"samples": [0.9, 1.0]}))
    row = bench.mode_row(0, "async", folder)
    assert row["steps_h"] == pytest.approx(3600 * 2 / 20)
    assert row["rollouts_h"] == pytest.approx(3600 * 64 / 20)
    assert row["wait_share"] == pytest.approx(5 / 20)
    assert row["staleness"] == 0.5 and row["stale_dropped"] == 4.0
    assert row["cpu_busy"] == pytest.approx(0.95)
    assert row["heldout"] == (0.25, 0.75) and row["rise"] == 0.3

    sync = bench.mode_row(0, "sync", run_folder(tmp_path, "seed-0-sync", async_run=False))
    assert sync["wait_share"] is None and sync["staleness"] == 0.0 and sync["cpu_busy"] is None


def test_the_cpu_sampler_waits_for_the_first_saved_step_and_writes_its_samples(tmp_path):
    folder = tmp_path / "run"
    with bench.CpuBusy(folder) as busy:
        time.sleep(1.5)
        assert busy.samples == []  # no step saved yet: SFT and set-up are not counted
        (folder / "trajectories").mkdir(parents=True)
        (folder / "trajectories" / "step-00000-call-0001.jsonl").write_text("")
        time.sleep(3.5)
    saved = json.loads((folder / "cpu_busy.json").read_text())["samples"]
    assert saved == busy.samples and len(saved) >= 1
    assert all(0.0 <= s <= 1.0 for s in saved)
