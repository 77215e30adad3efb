"""End to end: `train()` on the tiny model with real Docker sandboxes leaves a run folder
that explains itself (config, metrics with prefixed names, trajectories, plot, summary)."""

from __future__ import annotations

import json
import os

import pytest

from tbrl_lib.train.config.presets import ONE_STEP
from tbrl_lib.trl_vllm import installed_note


@pytest.mark.docker
@pytest.mark.slow
def test_one_grpo_step_with_real_sandboxes(tmp_path, docker_client, base_image, capfd):
    from tbrl_lib.step_progress import SECONDS_PER_STEP
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.grpo.training import train
    from tbrl_lib.train.report.callbacks import OWN_PREFIXES
    from tbrl_lib.train.report.run_files import load_metrics, rollouts_frame

    out = tmp_path / "run"
    summary = train(load_preset("cpu-smoke", ONE_STEP), out)
    assert summary["steps"] == 1 and summary["rollouts"] == 2
    console = capfd.readouterr()  # TRL's vLLM-range warning: one line when it applies, once
    notes = [line for line in console.out.splitlines() if line.startswith("note: vLLM ")]
    assert len(notes) == (1 if installed_note() else 0), notes
    assert "TRL currently supports" not in console.err
    assert 0.0 <= summary["mean_reward"] <= 1.0
    for name in ["config.json", "metrics.jsonl", "reward.png", "summary.json", "memory_plan.txt"]:
        assert (out / name).is_file(), name
    config = json.loads((out / "config.json").read_text())
    assert config["tbrl"]["grpo"]["num_generations"] == 2 and config["trl"]["num_generations"] == 2
    metrics = load_metrics(out)
    assert all(c == "step" or c.startswith(("train/", *OWN_PREFIXES)) for c in metrics.columns)
    assert metrics[SECONDS_PER_STEP].gt(0).all()  # the live panel's ETA comes from it
    assert {
        "train/loss",
        "rollout/turns",
        "reward/total",
        "reward/tests",
        "reward/judge",
        "sandbox/startup_seconds",
    } <= set(metrics.columns)
    rollouts = rollouts_frame(out)
    assert len(rollouts) == 2 and set(rollouts.task_id) == {"count-error-lines"}
    # the step's largest micro-batch, noted for the memory report and planned at
    memory, grpo = summary["memory"], summary["memory"]["phases"]["grpo"]
    trained = grpo["reached"]["training_tokens"]
    episode = config["tbrl"]["rollout"]["episode"]
    assert rollouts.completion_tokens.max() < trained
    assert trained <= config["tbrl"]["grpo"]["per_device_batch_size"] * episode["max_total_tokens"]
    assert 0 < grpo["reached_plan_gib"] <= grpo["planned_gib"]
    assert len(memory["steps_resident"]) == len(memory["steps"]) == 1
    assert memory["steps_reached_plan"] == [grpo["reached_plan_gib"]]  # one step: the phase's
    assert (rollouts.completion_tokens >= rollouts.assistant_tokens).all()
    # A busy host may fail a container start: such a rollout must be masked, never scored 0.
    infra = rollouts[rollouts.infra_error]
    assert infra.empty or (infra.reward.isna().all() and (infra.assistant_tokens == 0).all())
    # every container of this run is gone (its id names this process: another run on the
    # same engine, a notebook or a second checkout's suite, is not this test's to judge)
    run_id = f"train-cpu-smoke-{os.getpid()}"
    assert docker_client.api.containers(all=True, filters={"label": f"tbrl.run={run_id}"}) == []


def test_reward_trend_compares_the_first_and_last_steps_and_the_flat_share():
    from tbrl_lib.train.grpo.summary import reward_trend, sampling_totals

    records = [
        {"step": s, "train/reward": r, "train/frac_reward_zero_std": z}
        for s, (r, z) in enumerate([(0.1, 0.0), (0.2, 0.5), (0.3, 0.0), (0.7, 0.0), (0.8, 0.5)])
    ]
    records.append({"step": 6, "eval/solve_rate": 0.5})  # an evaluation-only line
    trend = reward_trend(records)
    assert trend["reward_first3"] == pytest.approx(0.2)
    assert trend["reward_last3"] == pytest.approx(0.6)
    assert trend["rise"] == pytest.approx(0.4)
    assert trend["zero_std_share"] == pytest.approx(0.2)
    assert reward_trend([]) == {} and sampling_totals([]) == {}


def test_train_takes_the_callers_config_not_a_preset_name(tmp_path):
    from tbrl_lib.train.grpo.training import train

    with pytest.raises(TypeError, match="load_preset"):  # the old train(preset, overrides, out)
        train("cpu-smoke", {"grpo.max_steps": 1}, tmp_path)  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())  # refused before any run folder is made
