"""One name and one default per concept: the training config is made of the lower layers' own
configs, and no setting name appears in two of its sections (evaluation's `RunConfig` nests
the same episode and reward configs, so it cannot disagree either). And what
`grpo.async_rollouts` refuses: each rule names the setting, its value, why, and what to set."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.evaluate.results import RunConfig
from tbrl_lib.overrides import settings_reference
from tbrl_lib.rewards.reward import RewardConfig
from tbrl_lib.rollout.config import RolloutConfig
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import config_from_dict, load_preset, preset_names

SAME_NAME_ON_PURPOSE = {
    "learning_rate": "the warm start (sft) and GRPO (grpo) are two optimisations of one run",
}
"""Setting names allowed in two sections, each with why it is not one concept twice."""


def test_no_setting_name_is_in_two_sections():
    places: dict[str, list[str]] = defaultdict(list)
    for key, _, _ in settings_reference(TrainConfig):
        places[key.rsplit(".", 1)[-1]].append(key)
    twice = {
        name: keys
        for name, keys in places.items()
        if len(keys) > 1 and name not in SAME_NAME_ON_PURPOSE
    }
    assert not twice, f"one concept, one name: {twice}"
    assert len(places) > 80  # every section was listed (model .. launch, episode .. tools)


def test_the_rollout_section_is_the_config_evaluation_runs_with():
    assert TrainConfig.model_fields["rollout"].annotation is RolloutConfig
    assert RunConfig.model_fields["episode"].annotation is EpisodeLimits
    assert RunConfig.model_fields["reward"].annotation is RewardConfig
    # so a default of the episode, sandbox or reward is one default for both
    assert TrainConfig().rollout.episode == RunConfig(policy="oracle").episode
    assert TrainConfig().rollout.reward == RunConfig(policy="oracle").reward
    assert TrainConfig().rollout.sandbox == SandboxConfig()


def test_every_setting_is_documented_where_tbrl_train_settings_shows_it():
    undocumented = [key for key, _, doc in settings_reference(TrainConfig) if not doc]
    assert not undocumented


def test_an_old_eval_results_file_reads_its_judge_into_the_reward():
    old = RunConfig.model_validate({"policy": "oracle", "judge": "none", "reward": {"w_judge": 0}})
    assert old.reward.judge == "none" and old.reward.weights["judge"] == 0


# --- asynchronous rollouts: what can generate while the step trains --------------------------

ASYNC = {"grpo": {"async_rollouts": True}}
GPUS_8 = {"gpus_per_node": 8, "gpu_memory_gb": 80}


def _async(grpo: dict | None = None, **launch) -> TrainConfig:
    """An async config through the path presets and --set take (errors in one line)."""
    return config_from_dict({"grpo": {**ASYNC["grpo"], **(grpo or {})}, "launch": launch})


@pytest.mark.parametrize(
    "grpo, launch, says",
    [
        (
            {},
            {"generation_backend": "vllm-colocate"},
            [
                "launch.generation_backend=vllm-colocate (",
                "cannot generate while a step trains",
                "set launch.generation_backend=vllm-server",
            ],
        ),
        (
            {},
            {**GPUS_8, "distributed": "zero3", "generation_backend": "hf"},
            [
                "launch.generation_backend=hf and launch.distributed=zero3 (",
                "whole weights in each process",
                "set launch.distributed=ddp",
                "or launch.generation_backend=vllm-server, whose weight sync gathers the shards)",
            ],
        ),
        (
            {},
            {**GPUS_8, "distributed": "fsdp2", "generation_backend": "hf"},
            ["launch.generation_backend=hf and launch.distributed=fsdp2 (", "fsdp2 shards them"],
        ),
        (
            {"loss_type": "cispo"},
            {"gpus_per_node": 0, "generation_backend": "hf"},
            [
                "grpo.loss_type=cispo with launch.generation_backend=hf (",
                "exact for the clipped losses only",
                "set grpo.loss_type to one of grpo, dr_grpo, dapo, bnpo, or generate with "
                "vllm-server, where TRL weighs the per-token loss itself)",
            ],
        ),
    ],
    ids=["vllm-colocate", "hf-zero3", "hf-fsdp2", "loss-type"],
)
def test_async_refusals_name_the_setting_its_value_why_and_the_fix(grpo, launch, says):
    with pytest.raises(ValueError) as info:
        _async(grpo, **launch)
    message = str(info.value)
    assert message.startswith("config: grpo.async_rollouts=true cannot run with ")
    assert "\n" not in message
    for words in says:
        assert words in message, message


@pytest.mark.parametrize("loss", ["sapo", "luspo"])
def test_every_unclipped_loss_is_refused(loss):
    with pytest.raises(ValueError, match=f"grpo.loss_type={loss} "):
        _async({"loss_type": loss}, gpus_per_node=0, generation_backend="hf")


def test_several_async_refusals_come_in_one_message():
    with pytest.raises(ValueError) as info:
        _async({"loss_type": "sapo"}, **GPUS_8, distributed="zero3", generation_backend="hf")
    message = str(info.value)
    assert message.count("cannot run with") == 1
    assert "gathers the shards); grpo.loss_type=sapo with" in message


@pytest.mark.parametrize("loss", ["cispo", "sapo", "luspo"])
def test_a_vllm_server_takes_every_loss_since_trl_weighs_the_loss_itself(loss):
    config = _async({"loss_type": loss}, vllm_server_url="http://x:8000",
                    generation_backend="vllm-server")  # fmt: skip
    assert config.grpo.loss_type == loss


@pytest.mark.parametrize(
    "launch",
    [
        {"gpus_per_node": 0, "generation_backend": "hf"},  # CPU, one process
        {"gpus_per_node": 1, "generation_backend": "hf"},  # one GPU, whole weights
        {**GPUS_8, "distributed": "ddp", "generation_backend": "hf"},  # a whole copy per rank
        {"vllm_server_url": "http://x:8000", "generation_backend": "vllm-server"},
        {
            **GPUS_8,
            "num_nodes": 3,
            "distributed": "zero3",
            "generation_backend": "vllm-server",
            "vllm_server_nodes": 1,
        },
        {
            **GPUS_8,
            "distributed": "fsdp2",
            "generation_backend": "vllm-server",
            "vllm_server_nodes": 1,
        },  # fmt: skip
    ],
    ids=["cpu", "1gpu-hf", "ddp-hf", "server", "zero3-server-24", "fsdp2-server"],
)
@pytest.mark.parametrize("loss", ["grpo", "dr_grpo", "dapo", "bnpo"])
def test_async_runs_with_any_process_count_and_a_generator_beside_training(launch, loss):
    config = _async({"loss_type": loss, "gradient_accumulation_steps": 16}, **launch)
    assert config.grpo.async_rollouts and config.launch.num_processes >= 1


def test_sync_presets_take_async_unless_vllm_is_colocated_and_async_presets_load():
    for name in preset_names():
        config = load_preset(name)
        if config.grpo.async_rollouts:
            assert name.endswith("-async") and config.launch.generation_backend != "vllm-colocate"
            continue
        if config.launch.generation_backend != "vllm-colocate":
            assert load_preset(name, ASYNC).grpo.async_rollouts, name
            continue
        with pytest.raises(ValueError, match=f"preset '{name}'.*async_rollouts=true cannot run"):
            load_preset(name, ASYNC)
