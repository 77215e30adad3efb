"""SFT warm start: TRL's `SFTTrainer` on oracle demonstrations, loss on assistant tokens only.

The demonstrations (`tbrl_lib.train.demos`) are token-exact rollouts: `prompt_ids`, then
`completion_ids` with `env_mask` (1 on tokens the assistant wrote). They enter TRL as a
pre-tokenised dataset: `input_ids = prompt_ids + completion_ids` and
`assistant_masks = [0] * len(prompt_ids) + env_mask`, from which TRL builds labels with -100
everywhere else. Nothing is re-rendered, so the chat template is by construction the one
generation uses. The checkpoint (model + tokenizer) is a folder GRPO's `model:` accepts.

    tbrl train sft --family copy_answer --demos 32 --out outputs/sft-copy

Left out: packing, LoRA for SFT, evaluation inside the trainer (`assistant_loss` measures
the same loss before and after instead).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

from tbrl_lib.rewards.judges import make_judge
from tbrl_lib.synth.generate import make_task
from tbrl_lib.train.demos import demo_rows, record_demos, write_demos
from tbrl_lib.train.trl_compat import install_torch_logprob_head


@dataclass
class SFTSettings:
    """What `tbrl train sft` runs."""

    model: str = "tiny"
    """A model folder, `tiny` (the locally built tiny Qwen3) or `tiny:<size>` (`tiny_model.SIZES`)."""
    family: str = "copy_answer"
    """Procedural family the demonstrations come from."""
    difficulty: str = "easy"
    demos: int = 32
    """Number of oracle demonstrations (seeds `first_seed` ...)."""
    first_seed: int = 1000
    """Training seeds start here; held-out evaluation uses seeds below it."""
    epochs: float = 3.0
    learning_rate: float = 1e-3
    """Full fine-tuning of a random tiny model: large on purpose (a 1B+ model wants ~1e-5)."""
    batch_size: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        if self.demos < 1:
            raise ValueError(f"demos={self.demos}: need at least one demonstration")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate={self.learning_rate}: must be positive")


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


def resolve_model(model: str) -> str:
    if model == "tiny" or model.startswith("tiny:"):
        from tbrl_lib.policies.tiny_model import build_tiny_qwen3

        return str(build_tiny_qwen3(size=model.partition(":")[2] or "smoke"))
    return model


def train_sft(
    rows: Sequence[dict[str, Any]], model_path: str, out_dir: str | Path, settings: SFTSettings
) -> dict[str, Any]:
    """Fine-tune on `rows`; saves model + tokenizer to `out_dir/checkpoint`; returns a summary."""
    out = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    dataset = sft_dataset(rows)
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
        seed=settings.seed,
        use_cpu=not torch.cuda.is_available(),
        lr_scheduler_type="constant",
        warmup_steps=0,
        dataset_num_proc=None,
    )
    install_torch_logprob_head()  # CPU torch has no Triton kernel for TRL's fused LM head
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    after = assistant_loss(trainer.model, dataset)
    checkpoint = out / "checkpoint"
    trainer.save_model(str(checkpoint))
    tokenizer.save_pretrained(str(checkpoint))
    return {
        "checkpoint": str(checkpoint),
        "demos": len(rows),
        "loss_before": before,
        "loss_after": after,
        "steps": trainer.state.global_step,
        "settings": asdict(settings),
    }


def run_sft(settings: SFTSettings, out_dir: str | Path) -> dict[str, Any]:
    """Record oracle demonstrations on the family (real sandboxes), write them, fine-tune."""
    out = Path(out_dir)
    model_path = resolve_model(settings.model)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tasks = [
        make_task(settings.family, settings.first_seed + i, settings.difficulty)
        for i in range(settings.demos)
    ]
    results = asyncio.run(record_demos(tasks, tokenizer, judge=make_judge("rule")))
    rows = demo_rows(results)
    if not rows:
        raise RuntimeError(
            f"no oracle demonstration of {settings.family} solved its task "
            f"({[r.infra_error or r.termination for r in results][:3]}); check Docker and the family"
        )
    write_demos(rows, out / "demos.parquet")
    return train_sft(rows, model_path, out, settings)
