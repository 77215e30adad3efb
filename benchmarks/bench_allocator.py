"""What glibc's mmap threshold costs and saves on CPU: seconds, kernel time, page faults and
peak memory of three workloads at each threshold.

    python benchmarks/bench_allocator.py                       # ~10 min on 2 cores
    python benchmarks/bench_allocator.py --workloads sft --thresholds 0 131072

`train()` fixes the threshold at 128 KiB (`process_memory.return_freed_memory`, issue 46's
memory fix): every block that large is a mapping of its own, given back to the kernel when
freed, so freed activations do not stay resident. Each new mapping is faulted in a page at a
time (4 KiB; torch's huge pages cover tensors of 2 MiB and more, `import tbrl_lib.train`), so many
short-lived tensors between 128 KiB and 2 MiB cost page faults. Each workload runs in a fresh
process with the threshold set before torch allocates; measured over the work alone (the
model already loaded): wall seconds, user and kernel CPU seconds, minor page faults, and the
peak resident memory over what was resident before (the kernel's high-water mark).

- `sft`: `cpu-demo`'s warm start (`train_sft`: its tiny model, batches of 8 sequences shaped
  as its demonstrations, 178 prompt + 62 reply tokens of random ids; `--sft-steps` steps,
  with the loss before and after and the save)
- `generation`: `HFBackend` sampling 8 SmolLM2-135M prompts of 190 random tokens, 48 new
- `grpo`: one GRPO micro-batch of SmolLM2 with a rank-8 LoRA, 2 x 1,024 tokens, checkpointing
  (`bench_memory.py`'s fix variant)

Baseline in the same run: glibc's default (threshold 0: its own, raised as blocks are freed).
`generation` and `grpo` need `tbrl models fetch smollm2-135m`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.table import Table

from tbrl_lib.console import console
from tbrl_lib.process_memory import (
    MMAP_THRESHOLD_ENV,
    peak_gib,
    reset_peak,
    return_freed_memory,
)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `benchmarks.bench_memory`, for a plain `python benchmarks/...`
OUT = Path("outputs/bench_allocator")
THRESHOLDS = [0, 128 * 1024, 2 * 1024 * 1024]
"""glibc's default, what `train()` sets, torch's huge-page size."""
WORKLOADS = ("sft", "generation", "grpo")
PROMPT, REPLY, SFT_BATCH = 178, 62, 8
"""`cpu-demo`'s demonstrations: prompt and reply tokens, sequences per SFT step."""


def sft_work(steps: int) -> Callable[[], dict]:
    """`cpu-demo`'s SFT on `steps` batches of demonstration-shaped random rows."""
    import torch

    from tbrl_lib.models import resolve_model
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.warm_start.sft import train_sft

    config = load_preset("cpu-demo", {"sft.epochs": 1, "sft.batch_size": SFT_BATCH})
    model = resolve_model(config.model.name)
    gen = torch.Generator().manual_seed(0)
    vocab = 1000  # below the tiny model's vocabulary (2k): any id is a token
    rows = [
        {
            "prompt_ids": torch.randint(0, vocab, (PROMPT,), generator=gen).tolist(),
            "completion_ids": torch.randint(0, vocab, (REPLY,), generator=gen).tolist(),
            "env_mask": [1] * REPLY,
            "tests_score": 1.0,
            "careful": False,
        }
        for _ in range(steps * SFT_BATCH)
    ]

    def work() -> dict:
        with tempfile.TemporaryDirectory(prefix="bench-allocator-") as out:
            summary = train_sft(rows, model, out, config.sft, 0, None, False)
        return {"steps": summary["steps"], "loss_after": round(summary["loss_after"], 4)}

    return work


def generation_work() -> Callable[[], dict]:
    """One `HFBackend.generate` of 8 SmolLM2 prompts (its model loaded and read in first)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tbrl_lib.models import resolve_model
    from tbrl_lib.policies.hf import HFBackend

    path = resolve_model("smollm2-135m")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    backend = HFBackend(model, AutoTokenizer.from_pretrained(path), temperature=1.0, seed=0)
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 40_000, (190,), generator=gen).tolist() for _ in range(8)]
    backend.generate(prompts[:1], 1)  # weights mapped from their file: read them in

    def work() -> dict:
        samples = backend.generate(prompts, 48)
        return {"new_tokens": sum(len(s.ids) for s in samples)}

    return work


def grpo_work() -> Callable[[], dict]:
    """`bench_memory`'s GRPO micro-batch (chunked head, checkpointing), 2 x 1,024 tokens."""
    from benchmarks.bench_memory import grpo_micro_batch, lora_model

    model = lora_model("chunked", checkpointing=True)

    def work() -> dict:
        *_, seconds = grpo_micro_batch(model, 2, 1024, model.config.vocab_size)
        return {"micro_batch_s": round(seconds, 1)}

    return work


def one_workload(workload: str, threshold: int, sft_steps: int) -> dict:
    """`workload` in this process with glibc's mmap threshold at `threshold` bytes (0: as
    glibc comes); what the work alone took."""
    os.environ[MMAP_THRESHOLD_ENV] = str(threshold)  # also what train_sft's own call sets
    return_freed_memory()
    if workload == "sft":
        work = sft_work(sft_steps)
    elif workload == "generation":
        work = generation_work()
    else:
        work = grpo_work()
    reset_peak()
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    resident = peak_gib()  # the mark just reset: what is resident now
    extra = work()
    after, seconds = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - started
    return {
        "workload": workload,
        "threshold": threshold,
        "seconds": round(seconds, 1),
        "user_s": round(after.ru_utime - before.ru_utime, 1),
        "kernel_s": round(after.ru_stime - before.ru_stime, 1),
        "minor_faults": after.ru_minflt - before.ru_minflt,
        "over_resident_gib": round(peak_gib() - resident, 3),
        **extra,
    }


def threshold_name(threshold: int) -> str:
    if not threshold:
        return "glibc default"
    return f"{threshold // 1024} KiB" if threshold < 1024 * 1024 else f"{threshold >> 20} MiB"


def bench(workloads: list[str], thresholds: list[int], sft_steps: int) -> list[dict]:
    """Each workload at each threshold in a fresh process; the table, against glibc's default
    (or the first threshold given)."""
    rows = []
    for workload in workloads:
        for threshold in thresholds:
            command = [sys.executable, __file__, "--one", workload, str(threshold)]
            done = subprocess.run(
                [*command, "--sft-steps", str(sft_steps)],
                check=True,
                capture_output=True,
                text=True,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            console().print(rows[-1])
    table = Table(title="glibc's mmap threshold: time, page faults, memory over the loaded model")
    columns = ("workload", "threshold", "s", "vs first", "user s", "kernel s", "minor faults")
    columns += ("peak over resident GiB",)
    for column in columns:
        table.add_column(column)
    first = {}
    for r in rows:
        base = first.setdefault(r["workload"], r)
        table.add_row(
            r["workload"],
            threshold_name(r["threshold"]),
            f"{r['seconds']:.1f}",
            f"{r['seconds'] / base['seconds']:.2f}x",
            f"{r['user_s']:.1f}",
            f"{r['kernel_s']:.1f}",
            f"{r['minor_faults']:,}",
            f"{r['over_resident_gib']:.2f}",
        )
    console().print(table)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--thresholds", nargs="+", type=int, default=THRESHOLDS, help="bytes")
    parser.add_argument("--sft-steps", type=int, default=16, help="SFT steps of `sft`")
    parser.add_argument(
        "--one",
        nargs=2,
        metavar=("WORKLOAD", "THRESHOLD"),
        help="one workload at one threshold in this process, printed as JSON",
    )
    args = parser.parse_args(argv)
    if args.one:
        workload, threshold = args.one
        if workload not in WORKLOADS:
            parser.error(f"--one: workload {workload!r} is not one of {', '.join(WORKLOADS)}")
        print(json.dumps(one_workload(workload, int(threshold), args.sft_steps)))
        return
    rows = bench(args.workloads, args.thresholds, args.sft_steps)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "allocator.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
