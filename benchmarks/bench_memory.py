"""Memory: what one GRPO micro-batch costs with each log-prob head, and plan vs peak per phase.

    python benchmarks/bench_memory.py head                   # SmolLM2, 4 x 1,024 tokens (~10 min)
    python benchmarks/bench_memory.py head --batch 2 --tokens 512
    python benchmarks/bench_memory.py runs                   # every CPU preset, shortened
    python benchmarks/bench_memory.py runs --presets cpu-smoke cpu-demo --steps 3

`head`: one forward and backward of GRPO's loss over a micro-batch of `--batch` sequences
of `--tokens` tokens (the model scores all but the first 64 of each), through TRL's fused
LM-head forward, in `VARIANTS`: the whole-batch head the CPU used before
(`reference_logprobs`: fp32 log-probs and probabilities of every token kept for backward)
or `TorchChunkedLogProb`, gradient checkpointing off or on, glibc's allocator as it comes or
told to return freed memory (`return_freed_memory`), torch's large tensors on 4 KiB pages or
on transparent huge pages (`THP_MEM_ALLOC_ENABLE`, which `import tbrl_lib.train` turns on); each
in a fresh process, its peak
resident memory (the kernel's high-water mark, reset after the model is loaded:
`phase_memory.py`) and seconds. Baseline in the same run: the first variant (what
`cpu-smollm2-learn` ran).

`runs`: `train()` of each preset in its own process (`SHORTENED`: fewer GRPO steps and
held-out instances so the evaluations fit the time; `--steps` sets the steps), then per phase
the plan beside the measured peak (`summary.json` `memory.phases`), and the plan at the
batches the phase reached (its replies mostly stop before the token limit the plan assumes),
and GRPO's step 2 beside its last (growth): each step's peak, which follows its longest
rollouts, and what stayed resident after it. Needs Docker (real sandboxes) and, for the
smollm2 presets, `tbrl models fetch smollm2-135m`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from rich.table import Table

from tbrl_lib.console import console
from tbrl_lib.models import resolve_model
from tbrl_lib.policies.logprob_head import TorchChunkedLogProb, reference_logprobs
from tbrl_lib.process_memory import peak_gib, reset_peak, return_freed_memory

OUT = Path("outputs/bench_memory")
SCORED_FROM = 64
"""Tokens at the start of each sequence that are prompt (not scored), as in an episode."""


class WholeBatchHead:
    """The head before this benchmark's fix: autograd over the whole micro-batch's logits."""

    @staticmethod
    def apply(hidden, weight, bias, targets, temperature, *_args, outputs=("entropy",), **_kw):
        logps, entropy = reference_logprobs(hidden, weight, bias, targets, temperature)
        return logps, entropy if "entropy" in outputs else None, None, None, None


def grpo_micro_batch(model, batch: int, tokens: int, vocab: int) -> tuple[float, float, float]:
    """One forward and backward of a GRPO-shaped loss; (GiB resident before, peak GiB,
    seconds)."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (batch, tokens), generator=gen)
    labels = ids.clone()
    labels[:, :SCORED_FROM] = -100
    advantages = torch.randn(batch, 1, generator=gen)
    with torch.no_grad():  # the weights are mapped from their file: read them in first
        model(input_ids=ids[:, :8])
    gc.collect()
    reset_peak()
    loaded = peak_gib()  # the mark just reset: what is resident now
    started = time.monotonic()
    out = model(
        input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels, fused_lm_head=True
    )
    mask = out.label_mask.float()
    loss = -((out.log_probs * advantages + 0.0 * out.entropy) * mask).sum() / mask.sum()
    loss.backward()
    seconds = time.monotonic() - started
    peak = peak_gib()
    model.zero_grad(set_to_none=True)
    del out, loss
    return loaded, peak, seconds


def trainer_micro_batches(batch: int, tokens: int, micro_batches: int) -> dict:
    """`micro_batches` GRPO micro-batches of `batch` x `tokens` through the trainer's own path:
    `cpu-smollm2`'s `TrainingSession` and `SessionTrainer` (the model as TRL makes it, with what
    the trainer installs), then its loss (`compute_loss`) and backward, as a step runs them;
    (GiB resident before, peak GiB, seconds). What the guard test runs."""
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.grpo.session import TrainingSession
    from tbrl_lib.train.grpo.trainer import SessionTrainer

    config = load_preset(
        "cpu-smollm2",
        {
            "grpo.per_device_batch_size": batch,
            "rollout.episode.max_total_tokens": tokens,
            "data.family_tasks": 1,  # the session builds its tasks' images: one is enough
        },
    )
    out = OUT / "trainer"
    out.mkdir(parents=True, exist_ok=True)
    rollout = config.rollout.for_run(f"bench-memory-{os.getpid()}")
    session = TrainingSession(config, out, resolve_model(config.model.name), rollout)
    trainer = SessionTrainer(session)
    model = trainer.model
    model.train()
    if trainer.args.gradient_checkpointing:  # as `Trainer.train()` turns it on when it starts
        model.gradient_checkpointing_enable(trainer.args.gradient_checkpointing_kwargs)
    trainer.current_gradient_accumulation_steps = config.grpo.gradient_accumulation_steps
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, tokens), generator=gen)
    inputs = {
        "prompt_ids": ids[:, :SCORED_FROM],
        "prompt_mask": torch.ones(batch, SCORED_FROM, dtype=torch.long),
        "completion_ids": ids[:, SCORED_FROM:],
        "completion_mask": torch.ones(batch, tokens - SCORED_FROM, dtype=torch.long),
        "advantages": torch.randn(batch, generator=gen),
        "num_items_in_batch": torch.tensor(float(batch * (tokens - SCORED_FROM))),
    }
    with torch.no_grad():  # the weights are mapped from their file: read them in first
        model(input_ids=ids[:, :8])
    gc.collect()
    reset_peak()
    loaded = peak_gib()
    started = time.monotonic()
    for _ in range(micro_batches):
        trainer.compute_loss(model, inputs).backward()
    seconds = time.monotonic() - started
    peak = peak_gib()
    model.zero_grad(set_to_none=True)
    return {"loaded_gib": loaded, "peak_gib": peak, "seconds": seconds}


HEADS = {"whole batch": WholeBatchHead, "chunked": TorchChunkedLogProb}
VARIANTS = [  # (head, checkpointing, allocator returns freed memory, huge pages), a fix at a time
    ("whole batch", False, False, False),
    ("whole batch", False, True, False),
    ("chunked", False, True, False),
    ("chunked", True, True, False),
    ("chunked", True, True, True),
    ("chunked", True, False, True),
    ("whole batch", True, True, False),
]
"""The first is what `cpu-smollm2-learn` ran before 2026-12-06; the fifth is the fix (the
fourth before huge pages, the sixth huge pages without the allocator setting); the last
shows the head alone (what the guard test catches)."""


def lora_model(head: str, checkpointing: bool):
    """SmolLM2-135M with the preset's rank-8 LoRA and TRL's fused LM head through `head`,
    in training mode."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils

    from tbrl_lib.train.config.config import LORA_TARGETS

    base = AutoModelForCausalLM.from_pretrained(resolve_model("smollm2-135m"), dtype=torch.float32)
    utils.add_fused_lm_head(base, outputs=("log_probs", "entropy"))
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=list(LORA_TARGETS), task_type="CAUSAL_LM")
    model = get_peft_model(base, lora)
    model.train()
    if checkpointing:
        model.gradient_checkpointing_enable({"use_reentrant": False})
    utils._ChunkedLogProbFunction = HEADS[head]
    return model


def one_variant(head: str, checkpointing: bool, allocator: bool, batch: int, tokens: int) -> dict:
    """One micro-batch with `head`, in this process (`bench_head` runs each in its own: what
    one frees can stay resident and raise the next one's peak)."""
    if allocator:
        return_freed_memory()
    model = lora_model(head, checkpointing)
    loaded, peak, seconds = grpo_micro_batch(model, batch, tokens, model.config.vocab_size)
    return {
        "head": head,
        "checkpointing": checkpointing,
        "allocator": allocator,
        "loaded_gib": loaded,
        "peak_gib": peak,
        "seconds": seconds,
    }


def head_command(head: str, checkpointing: bool, allocator: bool, batch: int, tokens: int):
    """The command line of one variant in a process of its own (`head-one`)."""
    command = [sys.executable, __file__, "head-one", head, str(batch), str(tokens)]
    return command + ["--checkpointing"] * checkpointing + ["--allocator"] * allocator


def huge_pages_env(on: bool) -> dict[str, str]:
    """The environment of a variant's process: torch's huge pages on or off."""
    return os.environ | {"THP_MEM_ALLOC_ENABLE": "1" if on else "0"}


def bench_head(batch: int, tokens: int) -> list[dict]:
    """Each variant in a fresh process; the table."""
    rows = []
    for *variant, huge_pages in VARIANTS:
        done = subprocess.run(
            head_command(*variant, batch, tokens),
            check=True,
            capture_output=True,
            text=True,
            env=huge_pages_env(huge_pages),
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]) | {"huge_pages": huge_pages})
        console().print(rows[-1])
    table = Table(title=f"one GRPO micro-batch: SmolLM2-135M LoRA, {batch} x {tokens:,} tokens")
    columns = (
        "head",
        "checkpointing",
        "allocator",
        "huge pages",
        "peak GiB",
        "vs first",
        "seconds",
    )
    for column in columns:
        table.add_column(column)
    base_peak = rows[0]["peak_gib"]
    for r in rows:
        table.add_row(
            r["head"],
            "on" if r["checkpointing"] else "off",
            "returns freed" if r["allocator"] else "glibc default",
            "on" if r["huge_pages"] else "off",
            f"{r['peak_gib']:.2f}",
            f"{r['peak_gib'] / base_peak:.2f}x",
            f"{r['seconds']:.0f}",
        )
    console().print(table)
    return rows


SHORTENED = {
    "cpu-smoke": {},
    "cpu-demo": {"grpo.max_steps": 4, "heldout.instances": 4, "sft.epochs": 2},
    "cpu-smollm2": {"grpo.max_steps": 3, "heldout.instances": 4},
    "cpu-smollm2-learn": {"grpo.max_steps": 4, "heldout.instances": 2, "heldout.bundled": 0},
}
"""Per preset, what `runs` changes so every phase runs in minutes: fewer GRPO steps,
held-out instances and SFT epochs (the plan depends on none: it counts the largest batch,
not how many there are; `cpu-demo`'s 384 SFT steps took 5 minutes alone on 2 AVX2 cores,
25 beside a training run)."""


def run_preset(preset: str, overrides: dict, out: Path) -> dict:
    """`tbrl train run` of `preset` in a process of its own; its summary."""
    command = [sys.executable, "-m", "tbrl_lib.cli", "train", "run", "--preset", preset]
    for key, value in overrides.items():
        command += ["--set", f"{key}={value}"]
    started = time.monotonic()
    subprocess.run([*command, "--out", str(out)], check=True)
    summary = json.loads((out / "summary.json").read_text())
    summary["bench_seconds"] = time.monotonic() - started
    return summary


def step_two_and_last(values: list[float]) -> dict:
    """Step 2 (step 1 still holds the phase before it) beside the last step."""
    return {
        "step2_gib": values[1] if len(values) > 1 else None,
        "last_gib": values[-1] if values else None,
        "steps": len(values),
    }


def ratio(measured: float | None, against: float | None) -> str:
    return f"{measured / against:.2f}" if measured and against else ""


def bench_runs(presets: list[str], steps: int | None) -> list[dict]:
    """Plan beside measured peak per phase, and step 2 beside the last step, per preset."""
    rows = []
    for preset in presets:
        overrides = {**SHORTENED.get(preset, {})}
        if steps:
            overrides["grpo.max_steps"] = steps
        summary = run_preset(preset, overrides, OUT / "runs" / preset)
        memory = summary["memory"]
        for phase, row in memory["phases"].items():
            rows.append({"preset": preset, "phase": phase, **row})
        rows.append(
            {
                "preset": preset,
                "phase": "grpo steps: peak",
                **step_two_and_last(memory.get("steps", [])),
                "seconds": summary["bench_seconds"],
            }
        )
        planned = step_two_and_last(memory.get("steps_reached_plan", []))
        rows.append({"preset": preset, "phase": "grpo steps: plan at their batches", **planned})
        resident = step_two_and_last(memory.get("steps_resident", []))
        rows.append({"preset": preset, "phase": "grpo steps: resident after", **resident})
        console().print(rows[-3:])
    table = Table(title="memory per phase: plan vs measured peak (GiB, process resident)")
    columns = ("preset", "phase", "plan", "peak", "peak / plan", "plan at reached", "peak / that")
    for column in (*columns, "step 2", "last step", "last / step 2"):
        table.add_column(column)
    for r in rows:
        plan, peak, reached = r.get("planned_gib"), r.get("peak_gib"), r.get("reached_plan_gib")
        step2, last = r.get("step2_gib"), r.get("last_gib")
        cells = [
            r["preset"], r["phase"], plan, peak, ratio(peak, plan), reached,
            ratio(peak, reached), step2, last, ratio(last, step2),
        ]  # fmt: skip
        table.add_row(*("" if c is None else str(c) for c in cells))
    console().print(table)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    head = sub.add_parser("head", help="one GRPO micro-batch with each log-prob head")
    head.add_argument("--batch", type=int, default=4, help="sequences per micro-batch")
    head.add_argument("--tokens", type=int, default=1024, help="tokens per sequence")
    one = sub.add_parser("head-one", help="one variant of `head`, printed as JSON")
    one.add_argument("head", choices=sorted(HEADS))
    one.add_argument("batch", type=int)
    one.add_argument("tokens", type=int)
    one.add_argument("--checkpointing", action="store_true")
    one.add_argument("--allocator", action="store_true", help="return_freed_memory() first")
    trainer = sub.add_parser(
        "trainer-one", help="micro-batches through cpu-smollm2's own trainer, printed as JSON"
    )
    trainer.add_argument("batch", type=int)
    trainer.add_argument("tokens", type=int)
    trainer.add_argument("--micro-batches", type=int, default=3)
    runs = sub.add_parser("runs", help="train() of each CPU preset, plan vs peak per phase")
    runs.add_argument("--presets", nargs="+", default=list(SHORTENED), help="presets to run")
    runs.add_argument("--steps", type=int, default=None, help="GRPO steps (default: SHORTENED)")
    args = parser.parse_args(argv)
    if args.mode == "head-one":
        variant = (args.head, args.checkpointing, args.allocator, args.batch, args.tokens)
        print(json.dumps(one_variant(*variant)))
        return
    if args.mode == "trainer-one":
        print(json.dumps(trainer_micro_batches(args.batch, args.tokens, args.micro_batches)))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    if args.mode == "head":
        rows = bench_head(args.batch, args.tokens)
        (OUT / "head.json").write_text(json.dumps(rows, indent=2))
    elif args.mode == "runs":
        rows = bench_runs(args.presets, args.steps)
        (OUT / "runs.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
