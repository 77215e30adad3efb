"""The learning demo's short version: SFT warm start on a weaker teacher, then GRPO with
held-out evaluations, on the real path (tiny model, Docker sandboxes, TRL trainers).

The benchmark (`benchmarks/bench_learning.py`) measures whether the reward rises; this
test checks what must hold on any run: SFT lowers the assistant-token loss, GRPO changes
the parameters, some group has reward variance, and the report's pieces are there."""

from __future__ import annotations

import pytest


@pytest.mark.docker
@pytest.mark.slow
def test_warm_start_then_grpo_with_heldout_evaluations(tmp_path, docker_client, base_image, capfd):
    from safetensors.torch import load_file

    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.grpo.training import train
    from tbrl_lib.train.report.run_files import load_metrics

    out = tmp_path / "run"
    summary = train(
        load_preset(
            "cpu-demo",
            {
                "sft.demos": 16,
                # 24 epochs (48 SFT steps) make the tiny policy act: after 3 it only emits a few
                # tokens with no action, every reward is 0 under a judge that pays nothing for an
                # empty reply, and GRPO has no group with variance to learn from
                "sft.epochs": 24,
                "data.family_tasks": 8,
                "grpo.max_steps": 2,
                "heldout.every": 1,
                "heldout.instances": 4,
            },
        ),
        out,
    )
    warm = summary["warm_start"]
    assert warm["demos"] == 16
    assert 0 < warm["demos_right"] < 16  # cpu-demo's teacher slips (writes to /tmp) sometimes
    assert warm["loss_after"] < warm["loss_before"]
    before = load_file(f"{warm['checkpoint']}/model.safetensors")
    after = load_file(str(out / "final" / "model.safetensors"))
    assert any(not before[k].equal(after[k]) for k in before), "GRPO left every weight as it was"

    metrics = load_metrics(out)
    assert list(metrics["step"]) == [1, 2]
    # cpu-demo ramps up over 3 steps (transformers' ramp starts at 0: step 1 at lr 0)
    rates = metrics["train/learning_rate"].tolist()
    assert 0 <= rates[0] < rates[1] < load_preset("cpu-demo").grpo.learning_rate
    assert {"reward_first3", "reward_last3", "rise", "zero_std_share"} <= set(
        summary["reward_trend"]
    )
    assert (metrics["train/frac_reward_zero_std"] < 1.0).any(), "no group had reward variance"
    assert metrics["eval/solve_rate"].notna().all()  # an evaluation at every step
    assert {"sampling/zero_std_groups", "sampling/zero_std_after"} <= set(metrics.columns)

    table = summary["heldout"]
    assert [row["model"] for row in table] == ["base", "warm start", "grpo"]
    assert all(0.0 <= row["solve_rate"] <= 1.0 for row in table)
    assert "vs_previous" in table[2]
    # the last step's evaluation measured the final weights: it is the table's last row
    assert [row["folder"] for row in table] == ["base", "sft", "step-00002"]
    for name in ("base", "sft", "step-00001", "step-00002"):
        assert (out / "eval" / name / "results.json").is_file(), name
    assert not (out / "eval" / "final").exists()

    # the console: held-out results as they land, ~10 warm-start lines, one line per step
    lines = capfd.readouterr().out.splitlines()
    sft = [line for line in lines if line.startswith("sft step ")]
    assert 2 <= len(sft) <= 12 and sft[-1].startswith(f"sft step {warm['steps']}/{warm['steps']}")
    assert [line.split("  ")[0] for line in lines if line.startswith("grpo step ")] == [
        "grpo step 1/2",
        "grpo step 2/2",
    ]
    held = [line.split(":")[0] for line in lines if line.startswith("held-out ")]
    assert held == [
        "held-out base",
        "held-out warm start",
        "held-out step 1",
        "held-out step 2",
        "held-out final",
    ]


def test_every_rollout_of_the_demo_uses_the_presets_episode():
    # the warm start, GRPO and the held-out evaluations share one RolloutConfig
    from tbrl_lib.agent.prompts import system_prompt
    from tbrl_lib.train.config.presets import load_preset

    config = load_preset("cpu-demo")
    episode = config.rollout.episode  # the section the warm start, GRPO and evaluations all read
    assert episode.system_prompt == "compact" and episode.max_turns == 4
    assert len(system_prompt(episode)) < 600  # a few lines, not the 7 kB full prompt
