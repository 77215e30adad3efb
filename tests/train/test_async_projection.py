"""benchmarks/async_projection.py: the two schedules on cases whose answer is known, the
samplers on a run folder written by tbrl's own `save_rollouts`, a preset's plan, and the
`benchmarks/project_async.py` CLI end to end."""

from __future__ import annotations

import importlib.util
import json
import math
import random

import pytest

from benchmarks.async_projection import (
    ClusterAssumptions,
    Workload,
    empirical,
    lognormal,
    plan_preset,
    preset_shape,
    project,
    run_durations,
    simulate_async,
    simulate_sync,
)
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.plan.memory_plan import model_shape
from tbrl_lib.train.step.runner import StepRollout, save_rollouts
from tests.conftest import REPO

spec = importlib.util.spec_from_file_location(
    "project_async", REPO / "benchmarks" / "project_async.py"
)
cli = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cli)


def constant(seconds: float):
    return lambda rng: seconds


def work(train_s: float, slots: int = 32, staleness: int = 1, steps: int = 100) -> Workload:
    return Workload(rollouts_per_step=32, num_generations=8, slots=slots, train_s=train_s,
                    max_staleness=staleness, steps=steps)  # fmt: skip


def speedup(w: Workload, sample, seeds=(0, 1, 2)) -> float:
    both = project(w, sample, list(seeds))
    return both["async"].steps_per_hour / both["sync"].steps_per_hour


def test_sync_runs_a_step_in_waves_of_c_then_trains():
    # 32 episodes of 10 s on 8 slots: 4 waves (40 s), then 20 s of training: 60 s a step
    result = simulate_sync(work(20.0, slots=8, steps=10), constant(10.0))
    assert result.steps_per_hour == pytest.approx(60.0)
    assert result.trainer_utilisation == pytest.approx(20 / 60)
    assert result.generator_utilisation == pytest.approx(40 / 60)
    assert (result.staleness_mean, result.dropped_share) == (0.0, 0.0)


def test_without_training_time_async_gains_nothing_on_equal_episodes():
    # nothing to overlap and no tail to hide: both generate a step per 10 s
    assert speedup(work(0.0), constant(10.0)) == pytest.approx(1.0, abs=0.01)


def test_training_as_long_as_generation_doubles_steps_per_hour():
    # sync: 10 s generating + 10 s training; async generates step k+1 while step k trains
    w = work(10.0)
    assert 1.95 < speedup(w, constant(10.0)) <= 2.0
    result = simulate_async(w, constant(10.0))
    assert result.trainer_utilisation > 0.97  # the trainer never waits after the first step
    assert result.staleness_mean == pytest.approx(1.0, abs=0.02)  # one step behind
    assert result.dropped_share == 0.0


def test_a_long_tail_favours_async():
    # sync waits for the slowest of 32 episodes every step; async keeps the slots busy
    tail = lognormal(10.0, sigma=1.0, cap_s=math.inf)
    both = project(work(2.0), tail, [0, 1, 2])
    assert both["async"].steps_per_hour > 1.3 * both["sync"].steps_per_hour
    assert both["async"].generator_utilisation > both["sync"].generator_utilisation


def test_max_staleness_zero_trains_only_fresh_groups():
    # every group that started while the trainer trained is dropped and generated again
    w = work(10.0, staleness=0)
    for sample in (constant(10.0), lognormal(10.0, 0.8, math.inf)):
        result = simulate_async(w, sample)
        assert result.staleness_mean == 0.0
        assert result.dropped_share > 0.2
    # with equal episodes there is no tail to pick around: no faster than sync
    both = project(w, constant(10.0), [0])
    assert both["async"].steps_per_hour <= 1.001 * both["sync"].steps_per_hour


def test_max_staleness_one_never_trains_older_groups():
    result = simulate_async(work(5.0), lognormal(10.0, 1.0, math.inf))
    assert 0.0 < result.staleness_mean <= 1.0


def test_a_workload_whose_step_is_not_whole_groups_is_refused():
    with pytest.raises(ValueError, match="multiple of num_generations=8"):
        Workload(rollouts_per_step=30, num_generations=8, slots=4, train_s=1.0)


def test_lognormal_is_capped_and_has_its_median():
    rng = random.Random(0)
    draws = sorted(lognormal(100.0, 0.8, cap_s=300.0)(rng) for _ in range(4001))
    assert max(draws) == 300.0
    assert draws[2000] == pytest.approx(100.0, rel=0.1)


def rollout(seconds: float) -> StepRollout:
    return StepRollout("t1", [1, 2], [3, 4], [1, 1], None, reward=1.0, seconds=seconds)


@pytest.fixture
def run_folder(tmp_path):
    """A run folder as training leaves it: two steps of rollouts, a config, metrics."""
    save_rollouts([rollout(2.0), rollout(4.0)], tmp_path / "trajectories" / "step-00000.jsonl")
    save_rollouts([rollout(6.0), rollout(0.0)], tmp_path / "trajectories" / "step-00001.jsonl")
    config = load_preset("cpu-demo", {"grpo": {"async_rollouts": True}}).to_dict()
    (tmp_path / "config.json").write_text(json.dumps({"tbrl": config}))
    lines = [
        {"step": 1, "train/step_time": 20.0, "train/async/wait_s": 14.0},
        {"step": 2, "train/step_time": 10.0, "train/async/wait_s": 2.0},
        {"step": 3, "train/step_time": 12.0, "train/async/wait_s": 5.0},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path


def test_a_run_folder_gives_the_empirical_and_the_rescaled_shape(run_folder):
    durations = run_durations(run_folder)
    assert durations == [2.0, 4.0, 6.0]  # the zero-second row left out
    rng = random.Random(0)
    assert {empirical(durations)(rng) for _ in range(200)} == {2.0, 4.0, 6.0}
    # divided by the median (4 s), times 100 s, capped at 120 s
    assert {preset_shape(durations, 100.0, 120.0)(rng) for _ in range(200)} == {50, 100, 120}


def test_a_folder_without_rollouts_is_named(tmp_path):
    with pytest.raises(ValueError, match=str(tmp_path)):
        run_durations(tmp_path)


def test_an_async_run_gives_its_training_seconds(run_folder):
    numbers = cli.run_numbers(run_folder)
    assert numbers["mode"] == "async"
    assert numbers["train_s"] == pytest.approx(7.0)  # median of 6, 8, 7
    assert numbers["steps_h"] == pytest.approx(3600 * 3 / 42)


def test_32xh100_plan_caps_c_at_the_clusters_units_and_times_training_by_flops():
    config = load_preset("32xh100", {})
    a = ClusterAssumptions()
    sync, run_async = (plan_preset(config, mode, a) for mode in ("sync", "async"))
    assert (sync.slots, sync.train_gpus, sync.rollouts_per_step) == (120, 24, 96)
    assert sync.cap_s == 900.0  # no episode limit: the task default agent timeout
    params = model_shape("Qwen/Qwen3-32B").parameters()
    # update (6) + one forward for the old log-probs (2), no reference model (beta 0)
    flops = 8 * params * 96 * a.tokens_per_rollout
    assert sync.train_s == pytest.approx(flops / (24 * 989e12 * 0.35))
    assert run_async.train_s == sync.train_s
    assert any("5 per process x 24 process(es)" in line for line in sync.assumes)
    over = plan_preset(load_preset("32xh100", {"launch.sandbox_concurrency": 32}), "sync", a)
    assert over.slots == 128 and any(
        "768, capped at the Ray cluster's 128" in s for s in over.assumes
    )


def test_8xh100_async_gives_gpus_to_a_server():
    config = load_preset("8xh100", {})
    sync, run_async = (plan_preset(config, m, ClusterAssumptions()) for m in ("sync", "async"))
    assert (sync.train_gpus, run_async.train_gpus) == (8, 4)
    assert run_async.train_s == pytest.approx(2 * sync.train_s)


def test_cli_projects_cpu_demo_and_32xh100_and_says_what_it_assumes(capsys):
    results = cli.main(["--presets", "cpu-demo", "32xh100", "--steps", "30", "--seeds", "0"])
    out = capsys.readouterr().out
    assert set(results) == {"cpu-demo", "32xh100"}
    for preset in results:
        assert f"{preset}: async / sync steps per hour = " in out
    assert "assumes:" in out
    assert "MFU 0.35" in out and "32xh100: C = 120" in out
    assert results["32xh100"]["sync"].steps_per_hour > 0


def test_cli_reads_a_run_folder(run_folder, capsys):
    results = cli.main(["--presets", "cpu-demo", "--steps", "10", "--seeds", "0",
                        "--runs", str(run_folder)])  # fmt: skip
    out = capsys.readouterr().out
    assert "3 rollouts of" in out
    assert "training 7.0 s a step (measured)" in out
    # 32 episodes of 2-6 s on 4 slots, then 7 s of training: well under 3600 / 7 steps/h
    assert 0 < results["cpu-demo"]["sync"].steps_per_hour < 3600 / 7
