"""Tracking and hub options: `report_to`, `push_to_hub`, `hub_model_id` reach TRL's GRPOConfig,
and a short cpu-smoke run with report_to=tensorboard leaves event files with the reward parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbrl_lib.overrides import parse_overrides
from tbrl_lib.train.presets import load_preset
from tbrl_lib.train.trainer import grpo_args

# test_run.py's one-step cpu-smoke shape (2 rollouts of one task, one short turn)
SHORT_RUN = {
    "grpo.max_steps": 1,
    "data.task_ids": ["count-error-lines"],
    "grpo.num_generations": 2,
    "grpo.gradient_accumulation_steps": 2,
    "rollout.episode.max_tokens_per_turn": 16,
    "rollout.episode.max_turns": 1,
}


def test_report_to_defaults_to_none_and_takes_a_string_or_list():
    def report_to(**overrides):
        return load_preset("cpu-smoke", {"grpo": overrides}).grpo.report_to

    assert report_to() == []
    assert load_preset(
        "cpu-smoke", parse_overrides(["grpo.report_to=tensorboard"])
    ).grpo.report_to == ["tensorboard"]
    assert report_to(report_to="tensorboard, wandb") == ["tensorboard", "wandb"]
    assert report_to(report_to="none") == []


def test_tracking_and_hub_fields_reach_grpo_config(tmp_path):
    args = grpo_args(load_preset("cpu-smoke"), tmp_path)
    assert args.report_to == [] and args.push_to_hub is False and args.hub_model_id is None
    config = load_preset(
        "cpu-smoke",
        parse_overrides(
            ["grpo.report_to=tensorboard", "grpo.push_to_hub=true", "grpo.hub_model_id=me/agent"]
        ),
    )
    args = grpo_args(config, tmp_path)
    assert args.report_to == ["tensorboard"]
    assert args.push_to_hub is True and args.hub_model_id == "me/agent"


def _scalar_tags(root: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags: set[str] = set()
    for events in root.rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events))
        acc.Reload()
        tags |= set(acc.Tags()["scalars"])
    return tags


@pytest.mark.docker
@pytest.mark.slow
def test_cpu_smoke_run_with_tensorboard_writes_reward_components(
    tmp_path, docker_client, base_image
):
    from tbrl_lib.train.run import train

    out = tmp_path / "run"
    summary = train("cpu-smoke", {**SHORT_RUN, "grpo.report_to": "tensorboard"}, out)
    assert summary["steps"] == 1
    events = list(out.rglob("events.out.tfevents.*"))
    assert events, f"no TensorBoard event file under {out}"
    tags = _scalar_tags(out)
    # our reward breakdown and TRL's per-reward-function means, as TensorBoard scalars
    assert {"train/reward/total", "train/reward/tests", "train/reward/judge"} <= tags, tags
    assert "train/rewards/tbrl_total/mean" in tags, tags
