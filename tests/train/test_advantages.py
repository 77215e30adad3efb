"""Advantage estimators on hand-computed groups, and the plugs end to end: a throw-away reward
part and a throw-away estimator, each registered with one line, seen in a real run's
metrics.jsonl (real TRL trainer, real Docker sandboxes)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tbrl_lib.train.config.config import GRPOSettings
from tbrl_lib.train.config.estimators import ESTIMATORS, Estimator, advantages, grpo, rloo
from tbrl_lib.train.config.presets import ONE_STEP

NAN = float("nan")


def test_rloo_is_each_reward_minus_the_mean_of_the_others():
    rewards = torch.tensor([[1.0, 0.0, 0.5, 0.5]])
    # 1.0 - (0 + .5 + .5)/3 = 2/3; 0.0 - (1 + .5 + .5)/3 = -2/3; 0.5 - (1 + 0 + .5)/3 = 0
    expected = torch.tensor([[2 / 3, -2 / 3, 0.0, 0.0]])
    assert torch.allclose(rloo(rewards, GRPOSettings()), expected)


def test_rloo_leaves_masked_rollouts_out_of_every_baseline():
    rewards = torch.tensor([[1.0, NAN, 0.0], [0.7, NAN, NAN]])
    out = advantages(rewards.reshape(-1), 3, GRPOSettings(advantage="rloo"))
    # group 1: two scored, each against the other; group 2: one scored, no baseline -> 0
    assert out.tolist() == pytest.approx([1.0, 0.0, -1.0, 0.0, 0.0, 0.0])


def test_grpo_is_the_group_mean_and_std_as_trl_computes_them():
    rewards = torch.tensor([[1.0, 0.0, 0.5, 0.5], [0.2, 0.2, 0.2, 0.2]])
    out = grpo(rewards, GRPOSettings())
    std = math.sqrt(((0.5**2) * 2) / 3)  # sample std of the first group
    assert out[0].tolist() == pytest.approx([0.5 / (std + 1e-4), -0.5 / (std + 1e-4), 0, 0])
    assert out[1].tolist() == [0.0] * 4  # a flat group teaches nothing
    unscaled = grpo(rewards, GRPOSettings(scale_rewards="none"))
    assert unscaled[0].tolist() == pytest.approx([0.5, -0.5, 0.0, 0.0])


def test_rloo_is_dr_grpo_scaled_by_n_over_n_minus_1():
    rewards = torch.rand(5, 8, generator=torch.Generator().manual_seed(0))
    dr_grpo = grpo(rewards, GRPOSettings(scale_rewards="none"))
    assert torch.allclose(rloo(rewards, GRPOSettings()), dr_grpo * 8 / 7, atol=1e-6)


def test_an_unknown_estimator_is_refused_when_the_settings_are_read():
    from pydantic import ValidationError

    from tbrl_lib.train.config.presets import load_preset

    with pytest.raises(ValidationError, match="choose one of grpo, rloo"):
        GRPOSettings(advantage="ppo")
    # a preset with it is refused as it loads: before any run folder, warm start or TRL
    with pytest.raises(ValueError, match="grpo.advantage='ppo' is not an advantage estimator"):
        load_preset("cpu-demo", {"grpo.advantage": "ppo"})


def test_scale_rewards_is_refused_by_whichever_estimator_does_not_scale(monkeypatch):
    """The rule reads the estimator's record, not a name: a new unscaled estimator refuses
    `scale_rewards=group` as rloo does, and a new scaled one takes it."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="does not scale"):
        GRPOSettings(advantage="rloo", scale_rewards="group")
    monkeypatch.setitem(ESTIMATORS, "flat", Estimator(rloo, scaled=False))
    monkeypatch.setitem(ESTIMATORS, "wide", Estimator(grpo, scaled=True))
    with pytest.raises(ValidationError, match="advantage=flat: that estimator does not scale"):
        GRPOSettings(advantage="flat", scale_rewards="batch")
    assert GRPOSettings(advantage="flat").scale_rewards == "group"  # the default stays unused
    assert GRPOSettings(advantage="wide", scale_rewards="batch").advantage == "wide"


@pytest.mark.docker
@pytest.mark.slow
def test_a_registered_part_and_estimator_reach_the_run_and_grpo_is_trls(
    tmp_path, monkeypatch, docker_client, base_image
):
    """One GRPO step on cpu-smoke with a reward part `turns` and an estimator `ones`, each
    one registry line: the part has its metric and TRL reward function in metrics.jsonl and
    enters each rollout's total; the estimator gets the step's rewards and its advantages
    (all 1) are the ones trained on; and TRL's own advantages of that step equal what the
    `grpo` estimator computes from the same rewards, bit for bit."""
    from trl import GRPOTrainer

    from tbrl_lib.rewards.parts import PARTS, Part
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.grpo.training import train
    from tbrl_lib.train.report.run_files import load_metrics

    monkeypatch.setitem(PARTS, "turns", Part(lambda ev: 1.0 / (1 + len(ev.trajectory.turns))))
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def ones(rewards: torch.Tensor, settings: GRPOSettings) -> torch.Tensor:
        seen.append((rewards.clone(), grpo(rewards, settings)))
        return torch.ones_like(rewards)

    monkeypatch.setitem(ESTIMATORS, "ones", Estimator(ones, scaled=False))
    trl_advantages, trained_on = [], []
    scored, loss = GRPOTrainer._generate_and_score_completions, GRPOTrainer._compute_loss

    def keep_trls(self, inputs):
        output = scored(self, inputs)
        trl_advantages.append(output["advantages"].clone())
        return output

    def keep_trained(self, model, inputs):
        trained_on.append(inputs["advantages"].clone())
        return loss(self, model, inputs)

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", keep_trls)
    monkeypatch.setattr(GRPOTrainer, "_compute_loss", keep_trained)
    out = tmp_path / "run"
    train(
        load_preset(
            "cpu-smoke",
            {
                **ONE_STEP,
                "rollout.reward.weights.turns": 0.5,
                "rollout.reward.weights.budget": 0.1,  # the example part, beside the throw-away
                "grpo.advantage": "ones",
            },
        ),
        out,
    )
    metrics = load_metrics(out).iloc[0]
    assert 0.0 <= metrics["reward/turns"] <= 1.0 and 0.0 <= metrics["reward/budget"] <= 1.0
    assert metrics["reward/budget_missing_rate"] == 0.0
    assert metrics["train/rewards/tbrl_turns/mean"] == pytest.approx(metrics["reward/turns"])
    rows = [json.loads(line) for f in (out / "trajectories").glob("*.jsonl") for line in f.open()]
    scored_rows = [r for r in rows if not r["infra_error"]]
    for row in scored_rows:
        b = row["breakdown"]
        assert b["weights"]["turns"] == 0.5 and b["scores"]["turns"] == 1 / (1 + row["turns"])
        parts = [p for p, w in b["weights"].items() if w > 0 and b["scores"][p] is not None]
        expected = sum(b["weights"][p] * b["scores"][p] for p in parts) / sum(
            b["weights"][p] for p in parts
        )
        assert row["reward"] == pytest.approx(expected)
    # the estimator saw the step's rewards (one group of 2; masked rollouts NaN) ...
    assert len(seen) == 1 and seen[0][0].shape == (1, 2)
    totals = [NAN if r["infra_error"] else r["reward"] for r in rows]
    assert seen[0][0].reshape(-1).tolist() == pytest.approx(totals, nan_ok=True)
    # ... its advantages are what the loss weighs, and their size is in metrics.jsonl
    assert torch.cat(trained_on).reshape(-1).tolist() == [
        0.0 if r["infra_error"] else 1.0 for r in rows
    ]
    assert metrics["train/advantages/abs_mean"] == (1.0 if scored_rows else 0.0)
    # TRL's GRPO advantages of this step == the grpo estimator's over the same rewards
    assert torch.equal(trl_advantages[0], seen[0][1].reshape(-1).nan_to_num(0.0))
