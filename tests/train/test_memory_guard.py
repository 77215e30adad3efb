"""A guard against the return of GRPO's memory spike on CPU (issue 46): three GRPO
micro-batches of a long episode (1,024 tokens, all but 64 scored) through the trainer's own path, in a
process of its own: `cpu-smollm2`'s `TrainingSession` and `SessionTrainer` on the real
SmolLM2-135M with its LoRA adapter (the model as TRL makes it, with the fixes the trainer
installs where it makes it and the checkpointing its settings ask for), then the trainer's
loss and backward. Read back from the kernel's high-water mark, what they add to the loaded
model must stay within what the planner counts for a step of `cpu-smollm2` at that size.
Without any one of the three fixes the trainer installs (the chunked log-prob head, gradient
checkpointing, freed memory returned to the kernel) it does not: docs/benchmarks.md, "The
memory guard"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.plan.memory_plan import plan_memory

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_memory.py"
BATCH, TOKENS = 1, 1024


def micro_batches() -> dict:
    """Three micro-batches through the trainer's own path (`bench_memory.py trainer-one`)."""
    done = subprocess.run(
        [sys.executable, str(BENCH), "trainer-one", str(BATCH), str(TOKENS)],
        capture_output=True,
        text=True,
        timeout=560,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.docker
def test_the_trainers_long_grpo_micro_batches_stay_within_their_plan(smollm2, base_image):
    config = load_preset(
        "cpu-smollm2",
        {"grpo.per_device_batch_size": BATCH, "rollout.episode.max_total_tokens": TOKENS},
    )
    rows = {name: gib for name, gib, _ in plan_memory(config).rows}
    # what the step adds to a loaded model: the plan's working rows
    planned = sum(rows[n] for n in ("gradients", "optimizer", "activations", "logits"))
    measured = micro_batches()
    used = measured["peak_gib"] - measured["loaded_gib"]
    assert used <= planned * 1.15, (
        f"three GRPO micro-batches of {BATCH} x {TOKENS} tokens through the trainer used "
        f"{used:.2f} GiB over the loaded model, its plan {planned:.2f} GiB: did the trainer "
        "stop installing the chunked head, checkpointing or the allocator setting?"
    )
