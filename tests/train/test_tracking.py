"""Tracking and hub options: `report_to`, `push_to_hub`, `hub_model_id` reach TRL's GRPOConfig,
and a short cpu-smoke run with report_to=tensorboard leaves event files with the reward parts,
the curriculum's and dynamic sampling's numbers and the held-out solve rate at the step it was
measured, TRL's completions table with tbrl's columns, and one console line per step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbrl_lib.overrides import parse_overrides
from tbrl_lib.train.config.presets import ONE_STEP, load_preset
from tbrl_lib.train.grpo.trainer import grpo_args


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


def _scalars(root: Path) -> dict[str, dict[int, float]]:
    """Every TensorBoard scalar under `root`: tag -> {step: value}."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, dict[int, float]] = {}
    for events in root.rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            found.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return found


@pytest.mark.docker
@pytest.mark.slow
def test_a_short_run_logs_everything_to_tensorboard_and_one_console_line_per_step(
    tmp_path, docker_client, base_image, capfd
):
    """Two steps on one write_word instance, the held-out instance evaluated before training
    and at step 2 (`heldout.every: 2`): TensorBoard has the held-out solve rate at step 2 and
    not at step 1, and the reward parts, curriculum and sampling numbers at both; the console
    has one line per step and the held-out results as they landed."""
    import pandas as pd

    from tbrl_lib.train.grpo.training import train

    out = tmp_path / "run"
    settings = {
        **ONE_STEP,
        "grpo.max_steps": 2,
        "data.task_ids": [],
        "data.families": ["write_word"],
        "data.family_tasks": 1,
        "heldout.instances": 1,
        "heldout.every": 2,
        "grpo.report_to": "tensorboard",
        "grpo.log_completions": True,
    }
    summary = train(load_preset("cpu-smoke", settings), out)
    assert summary["steps"] == 2
    scalars = _scalars(out)
    # TRL's loggers put every key of a training step's log under train/ (transformers'
    # rewrite_logs), tbrl's own prefixes included
    assert set(scalars["train/eval/solve_rate"]) == {2}, scalars.get("train/eval/solve_rate")
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert scalars["train/eval/solve_rate"][2] == pytest.approx(metrics[1]["eval/solve_rate"])
    for tag in (
        "train/reward/total",
        "train/reward/tests",
        "train/reward/solved_rate",
        "train/rewards/tbrl_total/mean",
        "train/rewards/tbrl_tests/mean",
        "train/curriculum/active_tasks",
        "train/sampling/zero_std_groups",
    ):
        assert set(scalars.get(tag, {})) == {1, 2}, (tag, sorted(scalars))
    # TRL's completions table of the last step, with the episode's task, outcome and turns
    table = pd.read_parquet(out / "checkpoints" / "completions" / "completions_00002.parquet")
    assert {"task_id", "solved", "turns", "termination", "tbrl_total", "tbrl_tests"} <= set(
        table.columns
    )
    assert len(table) == 2 and table.task_id.str.startswith("write-word-").all()
    # the console: held-out base, one line per step with the reward, held-out at step 2, final
    lines = capfd.readouterr().out.splitlines()
    assert not any("┃" in line for line in lines)  # TRL's completions table is not printed
    steps = [line for line in lines if line.startswith("grpo step ")]
    assert [line.split()[2] for line in steps] == ["1/2", "2/2"], steps
    assert all(" reward " in line and "ETA" in line for line in steps), steps
    held = [line for line in lines if line.startswith("held-out ")]
    assert [line.split(":")[0] for line in held] == [
        "held-out base",
        "held-out step 2",
        "held-out final",
    ], held
    assert lines.index(held[1]) == lines.index(steps[1]) + 1  # as it landed, after its step
