"""SFT warm start: assistant-only labels, and a short real SFTTrainer run that lowers the
assistant-token loss and leaves a checkpoint GRPO can load."""

from __future__ import annotations

import gc

import pytest


def test_dataset_masks_prompt_and_observations():
    from tbrl_lib.train.warm_start.sft import sft_dataset

    row = {"prompt_ids": [5, 6, 7], "completion_ids": [8, 9, 10, 11], "env_mask": [1, 1, 0, 1]}
    [example] = sft_dataset([row])
    assert example["input_ids"] == [5, 6, 7, 8, 9, 10, 11]
    assert example["assistant_masks"] == [0, 0, 0, 1, 1, 0, 1]  # prompt and observation: no loss


@pytest.mark.docker
@pytest.mark.slow
def test_sft_lowers_assistant_loss_and_saves_checkpoint(tmp_path, docker_client, base_image):
    from transformers import AutoModelForCausalLM, PreTrainedModel

    from tbrl_lib.models import resolve_model
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.warm_start.sft import warm_start

    sft = {"demos": 4, "epochs": 2, "batch_size": 2, "precision": "fp32"}
    config = load_preset("cpu-demo", {"sft": sft})
    gc.disable()  # only warm_start's own collection may free the trainer's cycles
    try:
        summary = warm_start(config, resolve_model("tiny"), tmp_path)  # the smoke shape: fastest
        alive = [o for o in gc.get_objects() if isinstance(o, PreTrainedModel)]
    finally:
        gc.enable()
    assert not alive, "the warm start's model outlives it (the evaluation after it holds two)"
    assert summary["demos"] == 4 and summary["steps"] == 4
    assert summary["mixed_precision"] == "no"  # the preset's fp32, not TRL's bf16 default
    assert summary["loss_after"] < summary["loss_before"]
    AutoModelForCausalLM.from_pretrained(summary["checkpoint"])  # a `model:` GRPO can start from
    assert (tmp_path / "demos.parquet").is_file()


def test_tiny_model_sizes_build_distinct_models(tmp_path):
    # `learn` is the shape the CPU learning demo needs; `smoke` stays the default and cached path
    from transformers import AutoConfig

    from tbrl_lib.models.tiny_corpus import build_tiny_model

    smoke, learn = build_tiny_model(tmp_path), build_tiny_model(tmp_path, size="learn")
    assert smoke != learn and build_tiny_model(tmp_path) == smoke
    assert (
        AutoConfig.from_pretrained(learn).num_hidden_layers
        > AutoConfig.from_pretrained(smoke).num_hidden_layers
    )
