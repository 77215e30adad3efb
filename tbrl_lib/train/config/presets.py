"""Hardware presets: small YAML files of `TrainConfig` sections (`presets/<name>.yaml`).

`load_preset(name, overrides)` reads one, merges `overrides` (nested dicts, or dotted keys as
`--set grpo.max_steps=2` and notebook 04's `settings` give them) and validates the result.
A setting of the flat config tbrl had before its sections (`max_steps`, `sft_demos`,
`docker_hosts`, ...) is refused in one line naming its new key (`OLD_KEYS`).

A preset may start from another: `inherit: <base>` at its top takes the base preset's values
(itself resolved the same way) and merges the file's own over them, nested sections key by
key (`overrides.merge`), so an `-async` preset states only what differs from its twin.
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import yaml
from pydantic import ValidationError

from tbrl_lib.overrides import merge, nest_dotted, settings_error
from tbrl_lib.train.config.config import TrainConfig

OLD_KEYS: dict[str, str] = {
    "name": "preset",
    **{k: f"model.{k}" for k in ("dtype", "gradient_checkpointing", "use_lora", "lora_rank")},
    "lora_alpha": "model.lora_alpha",
    "model_loader": "model.loader",
    "enable_thinking": "model.enable_thinking",
    **{k: f"data.{k}" for k in ("tasks", "task_ids", "max_tasks", "lenient")},
    "family": "data.families",
    "family_difficulty": "data.family_difficulty",
    "family_tasks": "data.family_tasks",
    "max_turns": "rollout.episode.max_turns",
    "max_context_tokens": "rollout.episode.max_total_tokens",
    "max_new_tokens_per_turn": "rollout.episode.max_tokens_per_turn",
    "episode_time_limit_s": "rollout.episode.time_limit_s",
    "system_prompt": "rollout.episode.system_prompt",
    "tools": "rollout.episode.tools",
    "docker_hosts": "rollout.sandbox.backend",  # several machines: the ray backend
    "sandbox_start_timeout_s": "rollout.sandbox.start_timeout_s",
    "judge": "rollout.reward.judge",
    "reward_w_tests": "rollout.reward.weights.tests",
    "reward_w_judge": "rollout.reward.weights.judge",
    "on_judge_missing": "rollout.reward.on_judge_missing",
    **{
        k: f"grpo.{k}"
        for k in (
            "num_generations",
            "temperature",
            "top_p",
            "optimizer",
            "learning_rate",
            "lr_scheduler",
            "warmup_steps",
            "max_grad_norm",
            "max_steps",
            "per_device_batch_size",
            "gradient_accumulation_steps",
            "loss_type",
            "beta",
            "scale_rewards",
            "vllm_is_level",
            "vllm_is_cap",
            "max_infra_error_rate",
            "save_steps",
            "report_to",
            "push_to_hub",
            "hub_model_id",
        )
    },
    **{
        k: f"curriculum.{k}"
        for k in ("filter_after_groups", "retry_skipped_after_steps", "dynamic_sampling")
    },
    "refill_rounds": "curriculum.refill_rounds",
    **{
        f"sft_{k}": f"sft.{k}"
        for k in (
            "demos",
            "epochs",
            "learning_rate",
            "teacher_accuracy",
            "teacher_careful",
            "teacher_thinks",
        )
    },
    "eval_every": "heldout.every",
    "eval_tasks": "heldout.instances",
    **{
        k: f"launch.{k}"
        for k in (
            "num_nodes",
            "gpus_per_node",
            "gpu_memory_gb",
            "distributed",
            "generation_backend",
            "vllm_gpu_memory_utilization",
            "vllm_tensor_parallel_size",
            "vllm_server_nodes",
            "vllm_server_url",
            "sandbox_concurrency",
        )
    },
}
"""Flat setting of the config before its sections -> its key now."""
RENAMED_SECTIONS = {"model": "model.name", "curriculum": "curriculum.enabled"}
"""Flat settings whose old name is a section's name now: a plain value means the old one."""


PRESETS: Traversable = resources.files("tbrl_lib.train.config").joinpath("presets")
"""The folder of the shipped preset files."""
INHERIT = "inherit"
"""The top-level key that names the preset a preset file starts from."""


ONE_STEP = {
    "grpo.max_steps": 1,
    "data.task_ids": ["count-error-lines"],
    "grpo.num_generations": 2,
    "grpo.gradient_accumulation_steps": 2,
    "rollout.episode.max_tokens_per_turn": 16,
    "rollout.episode.max_turns": 1,
}
"""Overrides that shrink `cpu-smoke` to its smallest real run: one GRPO step of 2 rollouts of
one task, one short turn (the end-to-end tests and `benchmarks/trace_step.py`)."""


def preset_names() -> list[str]:
    """Presets shipped with tbrl (the YAML files in `tbrl_lib/train/config/presets/`)."""
    return _names_in(PRESETS)


def _names_in(folder: Traversable) -> list[str]:
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


def preset_values(name: str, folder: Traversable = PRESETS, _seen: tuple[str, ...] = ()) -> dict:
    """The plain values of preset file `<name>.yaml` in `folder`, its `inherit:` base resolved
    (the base's values with the file's merged over them)."""
    text = folder.joinpath(f"{name}.yaml").read_text("utf-8")
    values = yaml.safe_load(text) or {}
    refuse_old_keys(values, f"preset file {name}.yaml")
    if INHERIT not in values:
        return values
    base, where = values.pop(INHERIT), f"preset file {name}.yaml, key {INHERIT!r}"
    if base not in _names_in(folder):
        raise ValueError(f"{where}: unknown preset {base!r}; choose one of {_names_in(folder)}")
    if base in (*_seen, name):
        raise ValueError(f"{where}: {' -> '.join((*_seen, name, base))} inherits in a loop")
    return merge(preset_values(base, folder, (*_seen, name)), values)


def load_preset(name: str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The named preset with `overrides` applied, validated."""
    if name not in preset_names():
        raise ValueError(f"unknown preset {name!r}; choose one of {preset_names()}")
    values = preset_values(name)
    overrides = nest_dotted(overrides or {})
    refuse_old_keys(overrides, f"preset {name!r} settings")
    return config_from_dict({**merge(values, overrides), "preset": name}, where=f"preset {name!r}")


def config_from_dict(values: dict[str, Any], where: str = "config") -> TrainConfig:
    """A `TrainConfig` from plain (nested) values; every problem in one line naming its key."""
    refuse_old_keys(values, where)
    try:
        return TrainConfig.model_validate(values)
    except ValidationError as exc:
        raise ValueError(f"{where}: {settings_error(exc, TrainConfig)}") from None


def refuse_old_keys(values: dict[str, Any], where: str) -> None:
    """One line naming the new key of every flat setting of the config before its sections."""
    old = [k for k in values if k in OLD_KEYS]
    old += [
        k for k, new in RENAMED_SECTIONS.items() if k in values and not isinstance(values[k], dict)
    ]
    if old:
        moves = ", ".join(f"{k!r} is now {OLD_KEYS.get(k) or RENAMED_SECTIONS[k]!r}" for k in old)
        example = OLD_KEYS.get(old[0]) or RENAMED_SECTIONS[old[0]]
        raise ValueError(
            f"{where}: {moves} (settings are sections now, e.g. --set {example}=VALUE; "
            "`tbrl train settings` lists every key)"
        )


def flat_settings(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"grpo": {"max_steps": 2}}` -> `{"grpo.max_steps": 2}` (lists and values are leaves)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(flat_settings(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def overrides_of(config: TrainConfig) -> list[str]:
    """The `--set KEY=VALUE` items that make `config` from its preset (the settings that
    differ from preset `config.preset`'s; none when that is no shipped preset): how a
    command line or a launch file asks for this very config."""
    if config.preset not in preset_names():
        return []
    preset = flat_settings(load_preset(config.preset).to_dict())
    return [
        f"{key}={_yaml_value(value)}"
        for key, value in flat_settings(config.to_dict()).items()
        if preset.get(key) != value
    ]


def _yaml_value(value: object) -> str:
    """`value` as `--set` reads it back (YAML): plain when that round-trips, else JSON."""
    if isinstance(value, str) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value)
