"""SFT warm start: TRL's `SFTTrainer` on oracle demonstrations, loss on assistant tokens only.

The demonstrations (`tbrl_lib.train.demos`) are token-exact rollouts: `prompt_ids`, then
`completion_ids` with `env_mask` (1 on tokens the assistant wrote). They enter TRL as a
pre-tokenised dataset: `input_ids = prompt_ids + completion_ids` and
`assistant_masks = [0] * len(prompt_ids) + env_mask`, from which TRL builds labels with -100
everywhere else. Nothing is re-rendered, so the chat template is by construction the one
generation uses. The checkpoint (model + tokenizer) is a folder GRPO's `model:` accepts.

Full fine-tuning by default; `lora_rank` > 0 trains a LoRA adapter on the attention and MLP
projections (PEFT, as GRPO's `use_lora`) and merges it into the saved weights, so the
checkpoint is an ordinary model folder either way.

    tbrl train sft --family write_word --demos 96 --teacher-accuracy 0.5 --out outputs/sft-words
    tbrl train sft --model smollm2-135m --demos 16 --lora-rank 8 --lr 2e-4 --out outputs/sft-smol

Left out: packing, evaluation inside the trainer (`assistant_loss` measures the same loss
before and after instead).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.aio import run_sync
from tbrl_lib.models import resolve_model
from tbrl_lib.rewards.judges import make_judge
from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.train.demos import demo_rows, demo_teachers, record_demos, write_demos
from tbrl_lib.train.heldout import training_tasks
from tbrl_lib.train.model_loader import LORA_TARGETS
from tbrl_lib.train.trl_compat import install_torch_logprob_head


@dataclass
class SFTSettings:
    """What `tbrl train sft` runs."""

    model: str = "tiny"
    """A model folder, `tiny` (the locally built tiny Qwen3) or `tiny:<size>` (`tiny_model.SIZES`)."""
    family: str = "write_word"
    """Procedural family the demonstrations come from."""
    difficulty: str = "easy"
    demos: int = 32
    """Number of oracle demonstrations (seeds `first_seed` ...)."""
    first_seed: int = 1000
    """Training seeds start here; held-out evaluation uses seeds below it."""
    epochs: float = 3.0
    learning_rate: float = 1e-3
    """Full fine-tuning of a random tiny model: large on purpose (a 1B+ model wants ~1e-5)."""
    batch_size: int = 8
    seed: int = 0
    teacher_accuracy: float = 1.0
    """Share of demonstrations the teacher gets right; in the rest it slips and writes its
    output file in /tmp instead of where the task asks (`demos.demo_teachers`). Below 1
    the warm start is right only sometimes, which is where GRPO has signal."""

    teacher_careful: float = 0.0
    """Share of demonstrations where the teacher plans, looks and checks (`CarefulOracle`);
    the rest run the solution and finish. The judge scores the careful ones higher."""
    lora_rank: int = 0
    """0: full fine-tuning; > 0: a LoRA adapter of this rank, merged into the checkpoint."""
    lora_alpha: int = 16
    """LoRA alpha (when `lora_rank` > 0)."""
    enable_thinking: bool = True
    """The chat flag the demonstrations are rendered with (as generation will use it)."""
    teacher_thinks: bool = False
    """In a thinking chat, open each reply with the teacher's reasoning (`demos.format_reply`)."""

    def __post_init__(self) -> None:
        if self.demos < 1:
            raise ValueError(f"demos={self.demos}: need at least one demonstration")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate={self.learning_rate}: must be positive")
        if self.lora_rank < 0 or (self.lora_rank and self.lora_alpha < 1):
            raise ValueError(
                f"lora_rank={self.lora_rank}, lora_alpha={self.lora_alpha}: use lora_rank 0 "
                "(full fine-tuning) or lora_rank >= 1 with lora_alpha >= 1 (e.g. 8 and 16)"
            )
        for name in ("teacher_accuracy", "teacher_careful"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)}: must be within [0, 1]")


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
    rows: Sequence[dict[str, Any]], model_path: str, out_dir: str | Path, settings: SFTSettings
) -> dict[str, Any]:
    """Fine-tune on `rows`; saves model + tokenizer to `out_dir/checkpoint`; returns a summary."""
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
        seed=settings.seed,
        use_cpu=not torch.cuda.is_available(),
        lr_scheduler_type="constant",
        warmup_steps=0,
        dataset_num_proc=None,
    )
    install_torch_logprob_head()  # CPU torch has no Triton kernel for TRL's fused LM head
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=_lora(settings) if settings.lora_rank else None,
    )
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    trainer.train()
    after = assistant_loss(trainer.model, dataset)
    checkpoint = out / "checkpoint"
    trained = trainer.model
    if settings.lora_rank:  # an ordinary model folder: the adapter merged into the weights
        trained = trained.merge_and_unload()
    trained.save_pretrained(str(checkpoint))
    tokenizer.save_pretrained(str(checkpoint))
    return {
        "checkpoint": str(checkpoint),
        "demos": len(rows),
        "loss_before": before,
        "loss_after": after,
        "steps": trainer.state.global_step,
        "demos_right": sum(r["tests_score"] >= 1.0 for r in rows),
        "demos_careful": sum(r["careful"] for r in rows),
        "trainable_parameters": trainable,
        "seconds": round(time.monotonic() - started, 1),
        "settings": asdict(settings),
    }


DEMO_EPISODE = EpisodeLimits(
    max_turns=4, max_tokens_per_turn=64, max_total_tokens=2048, system_prompt="compact"
)
"""The episode demonstrations are recorded in when the caller gives none: the short prompt
and budget of the CPU demo. GRPO must run with the same limits (the prompt states them)."""


def run_sft(
    settings: SFTSettings, out_dir: str | Path, rollout: RolloutConfig | None = None
) -> dict[str, Any]:
    """Record teacher demonstrations on the family (real sandboxes, `rollout`'s episode and
    reward), write them, fine-tune."""
    out = Path(out_dir)
    rollout = rollout or RolloutConfig(episode=DEMO_EPISODE)
    model_path = resolve_model(settings.model)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    # Demonstrations may repeat an instance (a small family has few).
    tasks = training_tasks(
        settings.family, settings.demos, settings.difficulty, settings.first_seed, distinct=False
    )
    teachers = demo_teachers(
        tasks, settings.teacher_accuracy, settings.seed, settings.teacher_careful
    )
    results = run_sync(  # a notebook kernel runs a loop already
        record_demos(
            tasks,
            tokenizer,
            rollout,
            make_judge("rule"),
            teachers,
            concurrency=4,
            enable_thinking=settings.enable_thinking,
            thinks=settings.teacher_thinks,
        )
    )
    rows = demo_rows(results, min_reward=1.0 if settings.teacher_accuracy >= 1.0 else 0.0)
    if not rows:
        raise RuntimeError(
            f"no teacher demonstration of {settings.family} was recorded "
            f"({[r.infra_error or r.termination for r in results][:3]}); check Docker and the family"
        )
    write_demos(rows, out / "demos.parquet")
    return train_sft(rows, model_path, out, settings)


def _lora(settings: SFTSettings) -> LoraConfig:
    return LoraConfig(
        r=settings.lora_rank,
        lora_alpha=settings.lora_alpha,
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
        target_modules=list(LORA_TARGETS),
    )
