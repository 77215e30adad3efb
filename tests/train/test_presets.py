"""Presets load and validate; bad values are refused with a message that says how to fix them;
the flat keys of the config before its sections are refused naming their new key; each async
preset is its synchronous twin but for the settings its generator needs, and its file
inherits the twin's (`inherit:`) and states only those."""

from __future__ import annotations

import pytest
import yaml

from tbrl_lib.overrides import parse_overrides
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import (
    INHERIT,
    OLD_KEYS,
    PRESETS,
    config_from_dict,
    load_preset,
    preset_names,
    preset_values,
)

REQUIRED = {"cpu-smoke", "cpu-demo", "1xh200", "2xa100", "8xh100", "32xh100"}


def test_every_required_preset_ships_and_validates():
    assert REQUIRED <= set(preset_names())
    for name in preset_names():
        config = load_preset(name)
        assert config.preset == name
        assert config.rollouts_per_step % config.grpo.num_generations == 0


@pytest.mark.parametrize("name", sorted(REQUIRED - {"cpu-smoke", "cpu-demo"}))
def test_gpu_presets_keep_the_upstream_numbers(name):
    # Terminal-Bench-RL: 16 rollouts per task, temp 1.2, lr 1e-6, clip 0.1, 32k context, bf16;
    # LoRA presets take a LoRA-sized learning rate instead (1e-6 barely moves the adapters).
    config = load_preset(name)
    grpo, episode = config.grpo, config.rollout.episode
    assert (grpo.num_generations, grpo.temperature) == (16, 1.2)
    assert grpo.learning_rate == (1e-5 if config.model.use_lora else 1e-6)
    assert (grpo.max_grad_norm, episode.max_total_tokens, config.model.dtype) == (
        0.1,
        32_768,
        "bf16",
    )
    assert episode.max_turns == 30 and config.rollout.sandbox.start_timeout_s == 120
    assert config.launch.uses_vllm


ASYNC_TWINS = {
    "1xh200-async": (
        "1xh200",
        {
            "model.loader",  # peft: the worker deep-copies the model
            "launch.generation_backend",  # hf: an in-process copy, not colocated vLLM
            "launch.vllm_gpu_memory_utilization",  # no vLLM on the GPU
            "launch.sandbox_concurrency",  # 6: what the HF worker's batch leaves room for
        },
    ),
    "8xh100-async": (
        "8xh100",
        {
            "launch.gpus_per_node",  # 6 train, the server's 2 after them
            "launch.generation_backend",
            "launch.vllm_server_url",
            "launch.vllm_tensor_parallel_size",
        },
    ),
    "16xh100-async": ("16xh100", set()),
    "32xh100-async": ("32xh100", set()),
}
"""Each async preset, its synchronous twin, and the settings where they differ on purpose."""


def _flat(values: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out |= _flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("name", sorted(ASYNC_TWINS))
def test_async_presets_are_their_sync_twin_but_for_the_generator(name):
    twin, differs = ASYNC_TWINS[name]
    config = load_preset(name)
    grpo, launch = config.grpo, config.launch
    assert grpo.async_rollouts and grpo.max_staleness == 2  # the projection's choice
    assert launch.generation_backend in ("hf", "vllm-server")
    ours, theirs = _flat(config.to_dict()), _flat(load_preset(twin).to_dict())
    changed = {k for k in ours if ours[k] != theirs[k]}
    assert changed == {"preset", "grpo.async_rollouts", "grpo.max_staleness"} | differs


@pytest.mark.parametrize("name", sorted(ASYNC_TWINS))
def test_an_async_preset_file_inherits_its_twin_and_states_only_what_differs(name):
    twin = ASYNC_TWINS[name][0]
    stated = yaml.safe_load(PRESETS.joinpath(f"{name}.yaml").read_text())
    assert stated.pop(INHERIT) == twin
    assert load_preset(name).to_dict() == {**load_preset(twin, stated).to_dict(), "preset": name}
    twin_values = _flat(preset_values(twin))
    assert all(twin_values.get(k, object()) != v for k, v in _flat(stated).items()), "restated"


def test_an_unknown_or_looping_base_is_refused_naming_the_file_and_the_key(tmp_path):
    (tmp_path / "child.yaml").write_text("inherit: nope\ngrpo: {max_steps: 2}\n")
    with pytest.raises(
        ValueError, match=r"preset file child.yaml, key 'inherit': unknown preset 'nope'"
    ):
        preset_values("child", tmp_path)
    (tmp_path / "a.yaml").write_text("inherit: b\n")
    (tmp_path / "b.yaml").write_text("inherit: a\n")
    with pytest.raises(ValueError, match=r"b.yaml, key 'inherit': a -> b -> a inherits in a loop"):
        preset_values("a", tmp_path)
    (tmp_path / "base.yaml").write_text("grpo: {max_steps: 5, beta: 0.1}\nmodel: {name: m}\n")
    (tmp_path / "kid.yaml").write_text("inherit: base\ngrpo: {max_steps: 2}\n")
    assert preset_values("kid", tmp_path) == {
        "grpo": {"max_steps": 2, "beta": 0.1},
        "model": {"name": "m"},
    }


def test_8xh100_async_splits_the_node_and_keeps_whole_groups():
    config = load_preset("8xh100-async")
    launch = config.launch
    assert launch.gpus_per_node + launch.vllm_tensor_parallel_size == 8
    assert launch.vllm_server_nodes == 0 and launch.vllm_server_url == "http://localhost:8000"
    assert (config.rollouts_per_step, config.tasks_per_step) == (48, 3)


def test_1xh200_async_is_one_process_with_a_copy_of_a_peft_model():
    config = load_preset("1xh200-async")
    assert config.launch.num_processes == 1 and config.launch.distributed == "none"
    assert config.model.use_lora and config.model.loader == "peft"


def test_cpu_demo_keeps_its_measured_recipe():
    # The numbers docs/benchmarks.md "Learning on CPU" measured on 3 seeds; change them with a new table.
    c = load_preset("cpu-demo")
    assert (c.model.name, c.data.families, c.data.family_tasks) == (
        "tiny:learn",
        ["write_word"],
        40,
    )
    assert (c.grpo.optimizer, c.grpo.learning_rate, c.grpo.lr_scheduler) == (
        "sgd",
        0.5,
        "constant_with_warmup",
    )
    assert (c.grpo.warmup_steps, c.grpo.max_steps, c.grpo.max_grad_norm) == (3, 12, 0.1)
    assert (c.grpo.num_generations, c.grpo.temperature, c.rollouts_per_step) == (8, 1.0, 32)
    episode = c.rollout.episode
    assert (episode.max_turns, episode.max_tokens_per_turn, episode.max_total_tokens) == (
        4,
        64,
        2048,
    )
    assert (episode.system_prompt, episode.time_limit_s) == ("compact", 60)
    assert (c.sft.demos, c.sft.epochs, c.sft.learning_rate, c.sft.teacher_accuracy) == (
        128,
        24,
        2e-3,
        0.3,
    )
    assert (c.heldout.instances, c.heldout.every, c.curriculum.retry_skipped_after_steps) == (
        12,
        6,
        6,
    )
    assert (c.rollout.reward.weights["tests"], c.rollout.reward.judge) == (0.65, "rule")


def test_cpu_smoke_is_small_and_cpu_only():
    config = load_preset("cpu-smoke")
    assert config.model.name == "tiny" and config.launch.cpu and config.model.dtype == "fp32"
    assert config.launch.generation_backend == "hf"
    assert config.tasks_per_step == 2 and 2 <= config.grpo.num_generations <= 4
    assert config.grpo.max_steps <= 2 and 2 <= config.launch.sandbox_concurrency <= 4


def test_32xh100_is_four_nodes_with_a_vllm_server_node():
    config = load_preset("32xh100")
    launch = config.launch
    assert config.model.name == "Qwen/Qwen3-32B" and launch.distributed == "zero3"
    assert launch.num_nodes + launch.vllm_server_nodes == 4 and launch.gpus_per_node == 8
    assert launch.generation_backend == "vllm-server"
    # sandboxes through the job's Ray cluster: 32 units on each of the 4 nodes hold the 24
    # processes' 5 in flight (preflight refuses more)
    assert config.rollout.sandbox.backend == "ray" and launch.units_per_node == 32
    assert launch.num_processes * launch.sandbox_concurrency <= 4 * 32


def test_overrides_apply_nested_or_dotted_and_unknown_keys_are_named():
    assert load_preset("cpu-smoke", {"grpo": {"max_steps": 1}}).grpo.max_steps == 1
    assert load_preset("cpu-smoke", {"grpo.max_steps": 1}).grpo.max_steps == 1
    with pytest.raises(
        ValueError, match=r"unknown setting 'grpo.max_step'; known settings under grpo: .*max_steps"
    ):
        load_preset("cpu-smoke", {"grpo.max_step": 1})
    with pytest.raises(ValueError, match="unknown setting 'grp'"):
        load_preset("cpu-smoke", {"grp.max_steps": 1})
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        load_preset("nope")


@pytest.mark.parametrize(
    "old, new",
    [
        ("max_steps", "grpo.max_steps"),
        ("max_turns", "rollout.episode.max_turns"),
        ("max_context_tokens", "rollout.episode.max_total_tokens"),
        ("sft_demos", "sft.demos"),
        ("eval_tasks", "heldout.instances"),
        ("docker_hosts", "rollout.sandbox.backend"),
        ("judge", "rollout.reward.judge"),
        ("sandbox_concurrency", "launch.sandbox_concurrency"),
        ("model", "model.name"),  # a section's name now: a plain value is the old key
        ("curriculum", "curriculum.enabled"),
    ],
)
def test_an_old_flat_key_is_refused_in_one_line_naming_its_new_key(old, new):
    value = "tiny" if old == "model" else True if old == "curriculum" else 2
    with pytest.raises(ValueError) as info:
        load_preset("cpu-smoke", {old: value})
    message = str(info.value)
    assert f"{old!r} is now {new!r}" in message and "\n" not in message
    with pytest.raises(ValueError, match=f"preset file x.yaml: {old!r} is now"):
        config_from_dict({old: value}, where="preset file x.yaml")


def test_every_old_key_names_a_setting_that_exists():
    known = {key for key, _, _ in _reference()}
    section_fields = {k for k in known} | {k.rsplit(".", 1)[0] for k in known}
    # or a key inside a mapping setting (`rollout.reward.weights.tests`)
    missing = [
        new
        for new in OLD_KEYS.values()
        if new not in section_fields and new.rsplit(".", 1)[0] not in known
    ]
    assert not missing, sorted(missing)


def _reference():
    from tbrl_lib.overrides import settings_reference

    return settings_reference(TrainConfig)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"grpo.num_generations": 1}, "use at least 2"),
        ({"grpo.gradient_accumulation_steps": 6}, "multiple of 4"),  # 6 rollouts, groups of 4
        (
            {"launch.distributed": "zero3"},
            "gpus_per_node=0 \\(CPU\\) needs distributed='none' \\(one process\\) or 'ddp'",
        ),
        ({"model.dtype": "bf8"}, "model.dtype: Input should be 'bf16', 'fp16' or 'fp32'"),
        ({"model.dtype": "fp16"}, "CPU.*needs model.dtype fp32 or bf16"),
        ({"rollout.episode.max_tokens_per_turn": 10_000}, "lower it or raise the budget"),
        ({"grpo.learning_rate": 0}, "grpo.learning_rate: Input should be greater than 0"),
        ({"grpo.learning_rate": "fast"}, "grpo.learning_rate: Input should be a valid number"),
        ({"grpo.top_p": 1.5}, "grpo.top_p"),
        (
            {"sft.demos": 4, "data.families": []},
            "sft.demos, heldout.instances > 0 needs data.families",
        ),
        ({"data.families": "write_word,no_such_family"}, "unknown task family"),
        ({"data.families": ["write_word", "write_word"]}, "names a family twice"),
        ({"data.family": "write_word"}, r"data.family is now data.families.*\[write_word\]"),
        ({"rollout.reward.judge": "none", "rollout.reward.weights.judge": 0.35}, "weights.judge=0"),
        ({"rollout.reward.weights.length": 0.1}, "'length', not a reward part"),
        ({"rollout.reward.w_tests": 1, "rollout.reward.weights.judge": 0}, "not both"),
        (
            {"grpo.advantage": "rloo", "grpo.scale_rewards": "group"},
            "does not scale its advantages",
        ),
        ({"grpo.scale_rewards": "std"}, "grpo.scale_rewards: Input should be"),
    ],
)
def test_bad_values_say_what_to_fix(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_preset(
            "cpu-demo" if "sft" in str(overrides) or "family" in str(overrides) else "cpu-smoke",
            overrides,
        )


def test_a_tests_only_reward_needs_no_judge_weight():
    config = load_preset("cpu-smoke", {"rollout.reward.judge": "none"})
    assert config.rollout.reward.weights["judge"] == 0 and not config.rollout.reward.judged


def test_multi_gpu_needs_a_distributed_strategy():
    with pytest.raises(ValueError, match="need distributed ddp, zero3 or fsdp2"):
        TrainConfig(launch={"gpus_per_node": 2}, grpo={"gradient_accumulation_steps": 8})


def test_vllm_server_needs_somewhere_to_talk_to():
    with pytest.raises(ValueError, match="vllm_server_url or vllm_server_nodes"):
        config_from_dict({"launch": {"generation_backend": "vllm-server"}})


def test_parse_overrides_reads_yaml_values_into_sections():
    assert parse_overrides(["grpo.max_steps=3", "model.use_lora=true", "data.task_ids=[a, b]"]) == {
        "grpo": {"max_steps": 3},
        "model": {"use_lora": True},
        "data": {"task_ids": ["a", "b"]},
    }
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_overrides(["grpo.max_steps"])
    with pytest.raises(ValueError, match="grpo was already set to a value"):
        parse_overrides(["grpo=1", "grpo.max_steps=2"])


def test_a_learning_rate_in_exponent_notation_is_a_number_and_a_word_is_refused():
    # YAML 1.1 (PyYAML) would read 1e-3 as the string "1e-3"
    values = parse_overrides(["grpo.learning_rate=1e-3", "grpo.beta=4E-2"])
    assert values == {"grpo": {"learning_rate": 0.001, "beta": 0.04}}
    assert parse_overrides(["rollout.reward.judge=e5"]) == {"rollout": {"reward": {"judge": "e5"}}}
    assert load_preset("cpu-demo", values).grpo.learning_rate == 1e-3


def test_tool_settings_reach_the_episodes_and_typos_are_named():
    config = load_preset(
        "cpu-smoke", parse_overrides(["rollout.episode.tools.bash_default_timeout=7"])
    )
    assert config.rollout.episode.tools.bash_default_timeout == 7
    with pytest.raises(ValueError, match="bash_default_timout"):
        load_preset("cpu-smoke", parse_overrides(["rollout.episode.tools.bash_default_timout=7"]))


def test_optimiser_schedule_and_reward_scaling_reach_trl(tmp_path):
    from tbrl_lib.train.grpo.trainer import grpo_args

    settings = {"scale_rewards": "none", "lr_scheduler": "cosine", "warmup_steps": 2}
    args = grpo_args(load_preset("cpu-demo", {"grpo": {**settings, "optimizer": "sgd"}}), tmp_path)
    assert (args.scale_rewards, args.lr_scheduler_type.value, args.warmup_steps) == (
        "none",
        "cosine",
        2,
    )
    assert args.optim.value == "sgd" and args.max_completion_length == 2048
    assert grpo_args(load_preset("cpu-smoke"), tmp_path).optim.value == "adamw_torch"


def test_dapo_and_logging_options_reach_trl_and_tbrl_train_settings_shows_them(tmp_path):
    from typer.testing import CliRunner

    from tbrl_lib.cli import app
    from tbrl_lib.train.grpo.trainer import grpo_args

    default = grpo_args(load_preset("cpu-smoke"), tmp_path)
    assert default.epsilon_high is None and default.epsilon == 0.2  # TRL: high = low
    assert not (default.mask_truncated_completions or default.use_liger_kernel)
    assert not default.log_completions
    config = load_preset(
        "cpu-smoke",
        parse_overrides(
            [
                "grpo.epsilon_high=0.28",
                "grpo.mask_truncated_completions=true",
                "grpo.use_liger_kernel=true",
                "grpo.log_completions=true",
            ]
        ),
    )
    args = grpo_args(config, tmp_path)
    assert args.epsilon_high == 0.28 and args.mask_truncated_completions is True
    assert args.use_liger_kernel is True and args.log_completions is True
    with pytest.raises(ValueError, match="epsilon_high"):
        load_preset("cpu-smoke", {"grpo": {"epsilon_high": 0}})
    shown = CliRunner().invoke(app, ["train", "settings", "grpo"]).output
    for key in (
        "epsilon_high",
        "mask_truncated_completions",
        "use_liger_kernel",
        "log_completions",
    ):
        assert f"grpo.{key}" in shown, shown


def test_cpu_smollm2_learn_keeps_its_measured_recipe():
    # The numbers docs/benchmarks.md "A real model learns skills" measured on 3 seeds.
    c = load_preset("cpu-smollm2-learn")
    assert (c.model.name, c.model.use_lora, c.model.lora_rank) == ("smollm2-135m", True, 8)
    assert c.data.families == ["write_word", "count_matches", "fix_script"]
    assert (c.data.family_tasks, c.sft.demos, c.sft.epochs, c.sft.teacher_accuracy) == (
        16,
        48,
        2,
        0.4,
    )
    assert (c.grpo.num_generations, c.rollouts_per_step, c.grpo.max_steps) == (8, 16, 24)
    assert (c.grpo.optimizer, c.grpo.learning_rate, c.grpo.temperature) == (
        "adamw_torch",
        2e-4,
        1.0,
    )
    assert c.curriculum.dynamic_sampling and c.rollout.episode.max_turns == 2
    assert (c.heldout.instances, c.heldout.bundled) == (12, 3)
    assert c.rollout.reward.weights == {"tests": 0.65, "judge": 0.35}


def test_cpu_cluster_is_two_cpu_nodes_of_one_process_with_sandboxes_on_ray():
    launch = load_preset("cpu-cluster").launch
    assert (launch.num_nodes, launch.num_processes, launch.distributed) == (2, 2, "ddp")
    assert load_preset("cpu-cluster").rollout.sandbox.backend == "ray"
    # every node declares units: the 2 processes' 2 in flight each fit the 4 of the cluster
    assert launch.units_per_node * 2 == launch.num_processes * launch.sandbox_concurrency
