"""The policy model for a LoRA run on one GPU: through unsloth when it is installed, else PEFT.

`choose_loader(config)` decides without importing anything: `unsloth` only for a preset that
asks for it (`model_loader: unsloth`, the 1xh200 preset), trains a LoRA adapter in one process
on one GPU, and where the `unsloth` package is importable; otherwise `peft`, with one log line
saying why. `load_policy(config, model_path, peft_config)` returns what `GRPOTrainer` takes as
`model` and `peft_config`: the path and the PEFT config (TRL loads and wraps it), or an
unsloth model that already carries its adapter (and no PEFT config).

unsloth patches transformers/TRL when imported; `import_early(config)` imports it before they
load (the CLI calls it). Left out: unsloth's own vLLM (`fast_inference`); vLLM stays TRL's.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from tbrl_lib.train.presets import TrainConfig

log = logging.getLogger("tbrl.train")

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The projections a LoRA adapter trains (Qwen3 and Llama name them alike): GRPO and SFT."""


def why_not_unsloth(config: TrainConfig) -> str | None:
    """Why this run loads with PEFT although it asked for unsloth (None: unsloth applies)."""
    if not (config.use_lora and config.num_processes == 1 and config.gpus_per_node == 1):
        return "model_loader=unsloth applies to 1-GPU LoRA runs; loading with PEFT"
    if importlib.util.find_spec("unsloth") is None:
        return (
            f"unsloth is not installed: loading {config.model} with PEFT "
            "(pip install -e '.[gpu]' for unsloth)"
        )
    return None


def choose_loader(config: TrainConfig) -> str:
    """`unsloth` or `peft` for `config` (one log line when unsloth was asked for but not used)."""
    if config.model_loader != "unsloth":
        return "peft"
    reason = why_not_unsloth(config)
    if reason:
        log.warning(reason)
        return "peft"
    return "unsloth"


def import_early(config: TrainConfig) -> None:
    """Import unsloth before transformers/TRL when this run will use it (its patches need that)."""
    if config.model_loader == "unsloth" and why_not_unsloth(config) is None:
        import unsloth  # noqa: F401  # pragma: no cover - GPU machines with the gpu extra


def load_policy(config: TrainConfig, model_path: str, peft_config: Any) -> tuple[Any, Any]:
    """(model, peft_config) for `GRPOTrainer`: the path and PEFT config, or an unsloth model."""
    if choose_loader(config) == "peft":
        return model_path, peft_config
    from unsloth import FastLanguageModel  # pragma: no cover - GPU machines only

    model, _ = FastLanguageModel.from_pretrained(
        model_name=model_path,
        max_seq_length=config.max_context_tokens,
        dtype=None,  # bf16 where the GPU has it
        load_in_4bit=False,
    )
    model = FastLanguageModel.get_peft_model(
        model,
        r=config.lora_rank,
        lora_alpha=config.lora_alpha,
        lora_dropout=0.0,
        target_modules=sorted(peft_config.target_modules),
        use_gradient_checkpointing="unsloth" if config.gradient_checkpointing else False,
        random_state=config.seed,
    )
    log.info("loaded %s through unsloth (LoRA r=%d)", config.model, config.lora_rank)
    return model, None
