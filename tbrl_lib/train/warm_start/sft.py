"""SFT warm start: TRL's `SFTTrainer` on oracle demonstrations, loss on assistant tokens only.

The demonstrations (`tbrl_lib.train.warm_start.demos`) are token-exact rollouts: `prompt_ids`, then
`completion_ids` with `env_mask` (1 on tokens the assistant wrote). They enter TRL as a
pre-tokenised dataset: `input_ids = prompt_ids + completion_ids` and
`assistant_masks = [0] * len(prompt_ids) + env_mask`, from which TRL builds labels with -100
everywhere else. Nothing is re-rendered, so the chat template is by construction the one
generation uses. The checkpoint (model + tokenizer) is a folder GRPO's `model:` accepts.

    tbrl train sft --preset cpu-demo --set sft.demos=96 --set sft.teacher_accuracy=0.5 --out DIR

`warm_start(config, base_model, out)` reads the run's own sections: `sft` (demonstrations,
epochs, learning rate, teachers), `data` (the family, its difficulty, the first seed),
`model` (LoRA, the thinking flag), `seed`, and `rollout`, whose episode the demonstrations
are recorded in (GRPO must run with the same limits: the prompt states them).

Full fine-tuning by default; a LoRA run (`model.use_lora`) trains a LoRA adapter of the same
rank on the attention and MLP projections and merges it into the saved weights, so the
checkpoint is an ordinary model folder either way.

Left out: packing, evaluation inside the trainer (`assistant_loss` measures the same loss
before and after instead).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

from tbrl_lib.aio import run_sync
from tbrl_lib.rewards.judges import make_judge
from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.train.config.config import SFTSettings, TrainConfig
from tbrl_lib.train.heldout.split import mixed_training_tasks, shares
from tbrl_lib.train.model.trl_compat import install_memory_fixes
from tbrl_lib.train.report.callbacks import SFTLines, use_progress_lines
from tbrl_lib.train.warm_start.demos import demo_rows, demo_teachers, record_demos, write_demos


def sft_dataset(rows: Sequence[dict[str, Any]]) -> Dataset:
    """Pre-tokenised SFT rows: the whole trajectory, assistant tokens marked for the loss."""
    return Dataset.from_list(
        [
            {
                "input_ids": list(r["prompt_ids"]) + list(r["completion_ids"]),
                "assistant_masks": [0] * len(r["prompt_ids"]) + [int(m) for m in r["env_mask"]],
            }
            for r in rows
        ]
    )


@torch.no_grad()
def assistant_loss(model: Any, dataset: Dataset) -> float:
    """Mean cross-entropy over assistant tokens (the SFT objective), one row at a time."""
    model.eval()
    total, count = 0.0, 0
    for row in dataset:
        ids = torch.tensor([row["input_ids"]])
        mask = torch.tensor(row["assistant_masks"][1:], dtype=torch.bool)
        logits = model(input_ids=ids).logits[0, :-1]
        losses = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")
        total += float(losses[mask].sum())
        count += int(mask.sum())
    return total / max(count, 1)


def train_sft(
    rows: Sequence[dict[str, Any]],
    model_path: str,
    out_dir: str | Path,
    settings: SFTSettings,
    seed: int = 0,
    peft_config: Any = None,
    gradient_checkpointing: bool = False,
) -> dict[str, Any]:
    """Fine-tune on `rows` (all weights, or the LoRA adapter `peft_config` describes, merged
    before saving); saves model + tokenizer to `out_dir/checkpoint`; returns a summary.
    `gradient_checkpointing`: recompute activations in backward (the run's model setting)."""
    out = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    dataset = sft_dataset(rows)
    started = time.monotonic()
    before = assistant_loss(model, dataset)
    args = SFTConfig(
        output_dir=str(out / "trainer"),
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.batch_size,
        max_length=None,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=seed,
        use_cpu=not torch.cuda.is_available(),
        lr_scheduler_type="constant",
        warmup_steps=0,
        dataset_num_proc=None,
        gradient_checkpointing=gradient_checkpointing,
        bf16=settings.precision == "bf16",
        fp16=settings.precision == "fp16",
    )
    install_memory_fixes()  # the chunked log-prob head, freed memory returned
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    use_progress_lines(trainer, SFTLines())  # ~10 lines, not a row per logged step
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    autocast = trainer.accelerator.mixed_precision  # what the trainer runs under: "no", "bf16"
    trainer.train()
    after = assistant_loss(trainer.model, dataset)
    checkpoint = out / "checkpoint"
    trained = trainer.model
    if peft_config is not None:  # an ordinary model folder: the adapter merged into the weights
        trained = trained.merge_and_unload()
    trained.save_pretrained(str(checkpoint))
    tokenizer.save_pretrained(str(checkpoint))
    summary = {
        "checkpoint": str(checkpoint),
        "demos": len(rows),
        "loss_before": before,
        "loss_after": after,
        "steps": trainer.state.global_step,
        "demos_right": sum(r["tests_score"] >= 1.0 for r in rows),
        "demos_careful": sum(r["careful"] for r in rows),
        "trainable_parameters": trainable,
        "mixed_precision": autocast,
        # the most tokens a batch can hold (each padded to the longest): the memory planner's
        # warm start phase is re-planned from it (`gpu_memory.memory_report`)
        "batch_tokens": settings.batch_size * max(len(r["input_ids"]) for r in dataset),
        "seconds": round(time.monotonic() - started, 1),
        "settings": settings.model_dump(),
    }
    # The trainer's reference cycles (callbacks, accelerator) keep the model resident until a
    # collection: without it the warm start evaluation held two models (+16-22% over its plan).
    del trainer, trained, model
    gc.collect()
    return summary


def warm_start(
    config: TrainConfig,
    base_model: str,
    out_dir: str | Path,
    rollout: RolloutConfig | None = None,
) -> dict[str, Any]:
    """Record `config.sft.demos` teacher demonstrations of `config.data.families` (real
    sandboxes, `rollout`'s episode and reward: the run's own by default), write them,
    fine-tune `base_model` (a folder) on them; returns the summary with the checkpoint."""
    sft, data = config.sft, config.data
    if not (sft.demos and data.families):
        raise ValueError(
            f"preset {config.preset!r} has no warm start (sft.demos={sft.demos}, "
            f"data.families={data.families}); set sft.demos > 0 and data.families"
        )
    out = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    # Shared out over the families in turn; they may repeat an instance (a small family has few).
    tasks = mixed_training_tasks(
        data.families,
        shares(sft.demos, len(data.families)),
        data.family_difficulty,
        data.first_seed,
        distinct=False,
    )
    teachers = demo_teachers(tasks, sft.teacher_accuracy, config.seed, sft.teacher_careful)
    results = run_sync(  # a notebook kernel runs a loop already
        record_demos(
            tasks,
            tokenizer,
            rollout or config.rollout,
            make_judge("rule"),
            teachers,
            concurrency=4,
            enable_thinking=config.model.enable_thinking,
            thinks=sft.teacher_thinks,
        )
    )
    rows = demo_rows(results, min_reward=1.0 if sft.teacher_accuracy >= 1.0 else 0.0)
    if not rows:
        raise RuntimeError(
            f"no teacher demonstration of {', '.join(data.families)} was recorded "
            f"({[r.infra_error or r.termination for r in results][:3]}); check Docker and the family"
        )
    write_demos(rows, out / "demos.parquet")
    model = config.model
    return train_sft(
        rows, base_model, out, sft, config.seed, model.peft_config(), model.gradient_checkpointing
    )
