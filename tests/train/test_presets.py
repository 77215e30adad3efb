"""Presets load and validate; bad values are refused with a message that says how to fix them."""

from __future__ import annotations

import pytest

from tbrl_lib.train.presets import (
    TrainConfig,
    config_from_dict,
    load_preset,
    parse_overrides,
    preset_names,
)

REQUIRED = {"cpu-smoke", "1xh200", "2xa100", "8xh100", "32xh100"}


def test_every_required_preset_ships_and_validates():
    assert REQUIRED <= set(preset_names())
    for name in preset_names():
        config = load_preset(name)
        assert config.name == name
        assert config.rollouts_per_step % config.num_generations == 0


@pytest.mark.parametrize("name", sorted(REQUIRED - {"cpu-smoke"}))
def test_gpu_presets_keep_the_upstream_numbers(name):
    # Terminal-Bench-RL: 16 rollouts per task, temp 1.2, lr 1e-6, clip 0.1, 32k context, bf16;
    # LoRA presets take a LoRA-sized learning rate instead (1e-6 barely moves the adapters).
    config = load_preset(name)
    assert (config.num_generations, config.temperature) == (16, 1.2)
    assert config.learning_rate == (1e-5 if config.use_lora else 1e-6)
    assert (config.max_grad_norm, config.max_context_tokens, config.dtype) == (0.1, 32_768, "bf16")
    assert config.generation_backend.startswith("vllm")


def test_cpu_smoke_is_small_and_cpu_only():
    config = load_preset("cpu-smoke")
    assert config.model == "tiny" and config.gpus_per_node == 0 and config.dtype == "fp32"
    assert config.generation_backend == "hf"
    assert config.tasks_per_step == 2 and 2 <= config.num_generations <= 4 and config.max_steps <= 2
    assert 2 <= config.sandbox_concurrency <= 4


def test_32xh100_is_four_nodes_with_a_vllm_server_node():
    config = load_preset("32xh100")
    assert config.model == "Qwen/Qwen3-32B" and config.distributed == "zero3"
    assert config.num_nodes + config.vllm_server_nodes == 4 and config.gpus_per_node == 8
    assert config.generation_backend == "vllm-server" and len(config.docker_hosts) > 1


def test_overrides_apply_and_unknown_keys_are_named():
    assert load_preset("cpu-smoke", {"max_steps": 1}).max_steps == 1
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['max_step'\].*known settings"):
        load_preset("cpu-smoke", {"max_step": 1})
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        load_preset("nope")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"num_generations": 1}, "use at least 2"),
        ({"gradient_accumulation_steps": 6}, "multiple of 4"),  # 6 rollouts, groups of 4
        ({"generation_backend": "vllm-colocate"}, "gpus_per_node=0"),
        ({"dtype": "bf8"}, "dtype='bf8' is not one of"),
        ({"max_new_tokens_per_turn": 10_000}, "lower it or raise the context"),
        ({"learning_rate": 0}, "learning_rate=0 must be > 0"),
        ({"top_p": 1.5}, "top_p=1.5"),
    ],
)
def test_bad_values_say_what_to_fix(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_preset("cpu-smoke", overrides)


def test_multi_gpu_needs_a_distributed_strategy():
    with pytest.raises(ValueError, match="need distributed ddp, zero3 or fsdp2"):
        TrainConfig(gpus_per_node=2, gradient_accumulation_steps=8)


def test_vllm_server_needs_somewhere_to_talk_to():
    with pytest.raises(ValueError, match="vllm_server_url or vllm_server_nodes"):
        config_from_dict({"generation_backend": "vllm-server"})


def test_parse_overrides_reads_yaml_values():
    assert parse_overrides(["max_steps=3", "use_lora=true", "task_ids=[a, b]"]) == {
        "max_steps": 3,
        "use_lora": True,
        "task_ids": ["a", "b"],
    }
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_overrides(["max_steps"])


def test_a_learning_rate_in_exponent_notation_is_a_number_and_a_word_is_refused():
    # YAML 1.1 (PyYAML) would read 1e-3 as the string "1e-3"
    values = parse_overrides(["learning_rate=1e-3", "beta=4E-2", "name=e5"])
    assert values == {"learning_rate": 0.001, "beta": 0.04, "name": "e5"}
    assert load_preset("cpu-demo", {"learning_rate": values["learning_rate"]}).learning_rate == 1e-3
    with pytest.raises(ValueError, match="learning_rate='fast' must be a number"):
        load_preset("cpu-demo", {"learning_rate": "fast"})


def test_tool_settings_reach_the_episodes_and_typos_are_named():
    from tbrl_lib.train.run import rollout_config

    config = load_preset("cpu-smoke", parse_overrides(["tools.bash_default_timeout=7"]))
    assert rollout_config(config).episode.tools.bash_default_timeout == 7
    with pytest.raises(ValueError, match="bash_default_timout"):
        load_preset("cpu-smoke", parse_overrides(["tools.bash_default_timout=7"]))


def test_optimiser_schedule_and_reward_scaling_reach_trl(tmp_path):
    from tbrl_lib.train.run import grpo_args

    settings = {"scale_rewards": "none", "lr_scheduler": "cosine", "warmup_steps": 2}
    args = grpo_args(load_preset("cpu-demo", {**settings, "optimizer": "sgd"}), tmp_path)
    assert (args.scale_rewards, args.lr_scheduler_type.value, args.warmup_steps) == (
        "none",
        "cosine",
        2,
    )
    assert args.optim.value == "sgd"
    assert grpo_args(load_preset("cpu-smoke"), tmp_path).optim.value == "adamw_torch"
    with pytest.raises(ValueError, match="scale_rewards='std' is not one of"):
        load_preset("cpu-demo", {"scale_rewards": "std"})
    with pytest.raises(ValueError, match="optimizer='adam' is not one of"):
        load_preset("cpu-demo", {"optimizer": "adam"})
