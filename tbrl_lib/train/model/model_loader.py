"""The policy model for a LoRA run on one GPU: through unsloth when it is installed, else PEFT.

`choose_loader(config)` decides without importing anything: `unsloth` only for a preset that
asks for it (`model.loader: unsloth`, the 1xh200 preset), trains a LoRA adapter in one process
on one GPU, and where the `unsloth` package is importable; otherwise `peft`, with one log line
saying why. `load_policy(config, model_path)` returns what `GRPOTrainer` takes as `model` and
`peft_config`: the path and the PEFT config (TRL loads and wraps it), or an unsloth model that
already carries its adapter (and no PEFT config).

unsloth patches transformers/TRL when imported; `import_early(config)` imports it before they
load. Every path to a run calls it first: `require_preflight` (the CLI and notebook 04 check
the preset before anything imports transformers) and the CLI itself (`--no-preflight`). A
run whose transformers is already loaded (a notebook kernel that trained before) gets a
warning naming the fix. Left out: unsloth's own vLLM (`fast_inference`); vLLM stays TRL's.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import Any

from tbrl_lib.slow_notice import slow_notice
from tbrl_lib.train.config.config import LORA_TARGETS, TrainConfig

log = logging.getLogger("tbrl.train")


def why_not_unsloth(config: TrainConfig) -> str | None:
    """Why this run loads with PEFT although it asked for unsloth (None: unsloth applies)."""
    launch = config.launch
    if not (config.model.use_lora and launch.num_processes == 1 and launch.gpus_per_node == 1):
        return "model.loader=unsloth applies to 1-GPU LoRA runs; loading with PEFT"
    if importlib.util.find_spec("unsloth") is None:
        return (
            f"unsloth is not installed: loading {config.model.name} with PEFT "
            "(pip install -e '.[gpu]' for unsloth)"
        )
    return None


def choose_loader(config: TrainConfig) -> str:
    """`unsloth` or `peft` for `config` (one log line when unsloth was asked for but not used)."""
    if config.model.loader != "unsloth":
        return "peft"
    reason = why_not_unsloth(config)
    if reason:
        log.warning(reason)
        return "peft"
    return "unsloth"


def import_early(config: TrainConfig) -> None:
    """Import unsloth before transformers/TRL when this run will use it (its patches need that)."""
    if config.model.loader != "unsloth" or why_not_unsloth(config) is not None:
        return
    late = [m for m in ("transformers", "trl", "peft") if m in sys.modules]
    if late and "unsloth" not in sys.modules:
        log.warning(
            "unsloth is imported after %s, which it patches: its kernels may not apply; "
            "restart the kernel (or process) and run the preset check first",
            ", ".join(late),
        )
    import unsloth  # noqa: F401  # GPU machines with the gpu extra


def load_policy(config: TrainConfig, model_path: str) -> tuple[Any, Any]:
    """(model, peft_config) for `GRPOTrainer`: the path and PEFT config, or an unsloth model."""
    model = config.model
    if choose_loader(config) == "peft":
        return model_path, model.peft_config()
    # unsloth: GPU machines with the gpu extra only, imported before transformers (import_early)
    from unsloth import FastLanguageModel  # pragma: no cover

    with slow_notice(f"loading model {model_path} through unsloth"):
        loaded, _ = FastLanguageModel.from_pretrained(
            model_name=model_path,
            max_seq_length=config.rollout.episode.max_total_tokens,
            dtype=None,  # bf16 where the GPU has it
            load_in_4bit=False,
        )
    loaded = FastLanguageModel.get_peft_model(
        loaded,
        r=model.lora_rank,
        lora_alpha=model.lora_alpha,
        lora_dropout=0.0,
        target_modules=sorted(LORA_TARGETS),
        use_gradient_checkpointing="unsloth" if model.gradient_checkpointing else False,
        random_state=config.seed,
    )
    log.info("loaded %s through unsloth (LoRA r=%d)", model.name, model.lora_rank)
    return loaded, None
