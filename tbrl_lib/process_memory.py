"""This process's memory while it trains: the peak of each phase and of each GRPO step read
from the kernel, the largest batches each ran, and the allocator told to give freed memory
back (`return_freed_memory`). The ground floor, with no torch import: training hooks it in
where the model and the optimizer are (`watch_training`, `RunClock.marking_steps`), so torch
calls it, and the planner (`train/plan/phase_memory.py`) reads what it kept.

At a phase's start the process's high-water mark (`VmHWM`) is reset by writing `5` to
`/proc/self/clear_refs`; at its end `VmHWM` in `/proc/self/status` is that phase's peak.
The kernel keeps it at every page fault, so a spike of one step is caught exactly, with no
sampler thread. Inside GRPO an optimizer step hook reads and resets it after every step
(`RunClock.marking_steps`), so `RunClock.steps` holds each step's peak and
`RunClock.resident` what stayed resident after it. Child processes (a vLLM server the run
started) are counted apart: the sum of their own `VmHWM` at the phase's end. Where the reset
is not allowed (not Linux, a locked-down /proc), peaks are the process's peak so far
(`ru_maxrss`), said by `RunClock.resettable`.

The largest batches since the last reset, noted by what runs them: a generation batch
(`BatchingGenerator`: its episodes, each padded to the batch's longest prompt plus its
longest reply) and a training micro-batch (the model's forward, `watch_training`: its
tokens, padded). `RunClock` resets them when a phase starts and keeps them beside the
phase's peak (`RunClock.shapes`), and the planner re-plans each phase at the shape it
reached (`memory_plan.memory_report`), so a phase whose replies stopped early is compared
with what its formulas say for those replies, not for full-length ones.

Left out: GPU memory (`memory_plan.measured_peak_gib` reports torch's peak), memory of
Docker sandboxes (not this process's).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

GIB = 2**30
STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


@dataclass
class Reached:
    generation_episodes: int = 0
    """Episodes of the largest generation batch (the one holding the most tokens)."""
    generation_context: int = 0
    """Tokens per episode of that batch: its longest prompt plus its longest reply."""
    generation_new: int = 0
    """Its longest reply."""
    training_tokens: int = 0
    """Tokens of the largest training micro-batch (sequences x padded length)."""

    def noted(self) -> dict[str, int]:
        """The fields something noted (non-zero)."""
        return {name: value for name, value in asdict(self).items() if value}

    def keep_generation(self, episodes: int, context: int, new_tokens: int) -> None:
        if episodes * context > self.generation_episodes * self.generation_context:
            self.generation_episodes = episodes
            self.generation_context = context
            self.generation_new = new_tokens


_reached = Reached()
_step = Reached()
"""Since the last reset (a phase), and since the last `take_step` (a GRPO step)."""


def note_generation(episodes: int, context: int, new_tokens: int) -> None:
    """A generation batch ran: kept when it holds more tokens than the largest so far."""
    for kept in (_reached, _step):
        kept.keep_generation(episodes, context, new_tokens)


def note_training(tokens: int) -> None:
    """A training micro-batch of `tokens` tokens ran."""
    for kept in (_reached, _step):
        kept.training_tokens = max(kept.training_tokens, tokens)


def reached() -> dict[str, int]:
    """What was noted since the last reset (empty: nothing ran)."""
    return _reached.noted()


def take_step() -> dict[str, int]:
    """What was noted since the last step (or reset); the next step starts afresh."""
    global _step
    noted, _step = _step.noted(), Reached()
    return noted


def reset() -> None:
    global _reached, _step
    _reached, _step = Reached(), Reached()


M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter number."""


MMAP_THRESHOLD_ENV = "TBRL_MMAP_THRESHOLD"
"""Bytes, in place of the threshold `return_freed_memory` is given; 0 keeps glibc's own
(`benchmarks/bench_allocator.py` measures each against the other this way)."""


def return_freed_memory(threshold: int = 128 * 1024) -> bool:
    """Have glibc's malloc serve every block of `threshold` bytes or more with its own mmap, so
    a freed tensor goes back to the kernel at once; True where set (glibc only).

    By default glibc raises that threshold to the largest block freed so far (up to 32 MiB);
    after a few steps activations come from its heap, and what they free stays resident.
    Setting it also stops the raising. The cost: a page fault per 4 KiB of each new tensor
    (what each costs: docs/benchmarks.md, "Memory"). `TBRL_MMAP_THRESHOLD` overrides it."""
    threshold = int(os.environ.get(MMAP_THRESHOLD_ENV, threshold))
    if not threshold:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, threshold))


def reset_peak() -> bool:
    """Reset this process's resident high-water mark; False where the kernel does not allow it."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_gib() -> float:
    """This process's resident high-water mark (since the last reset) in GiB."""
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / GIB
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (GIB if sys.platform == "darwin" else 2**20)


def children_peak_gib() -> float:
    """The sum of the high-water marks of this process's children (a vLLM server...)."""
    import psutil  # here only: Harbor's environment imports this module (policies) without it

    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            text = Path(f"/proc/{child.pid}/status").read_text()
        except OSError:
            continue
        total += next(
            (int(line.split()[1]) * 1024 for line in text.splitlines() if line[:6] == "VmHWM:"),
            0,
        )
    return total / GIB


class RunClock(dict):
    """Seconds per phase (the dict itself: summary.json's `phase_seconds`), with the peak
    resident memory of each phase (`peaks`, GiB), of its children (`children`), of each
    GRPO optimizer step (`steps`) and what stayed resident after each step (`resident`),
    and the largest batches of each phase (`shapes`) and of each step (`step_shapes`). With a
    `record` path, what is known so far is written there at each phase's end and each step
    (a run killed for memory keeps it)."""

    def __init__(self, record: Path | None = None) -> None:
        super().__init__()
        self.peaks: dict[str, float] = {}
        self.children: dict[str, float] = {}
        self.steps: list[float] = []
        self.resident: list[float] = []
        self.shapes: dict[str, dict[str, int]] = {}
        self.step_shapes: list[dict[str, int]] = []
        self.resettable = reset_peak()
        self.record = record
        self._running = 0.0

    def save(self) -> None:
        """Write the seconds and peaks so far to `record` (nothing without one)."""
        if self.record is not None:
            so_far = {"seconds": dict(self), "peaks_gib": self.peaks, "steps_gib": self.steps}
            so_far |= {"steps_resident_gib": self.resident, "children_gib": self.children}
            so_far |= {"shapes": self.shapes, "step_shapes": self.step_shapes}
            self.record.write_text(json.dumps(so_far) + "\n")

    def start_phase(self) -> None:
        reset_peak()
        reset()
        self._running = 0.0

    def end_phase(self, name: str) -> None:
        peak = max(self._running, peak_gib())
        self.peaks[name] = round(max(self.peaks.get(name, 0.0), peak), 3)
        children = children_peak_gib()
        if children:
            self.children[name] = round(children, 3)
        if shapes := reached():
            self.shapes[name] = shapes
        self.save()

    def mark_step(self) -> float:
        """The peak since the last step (or the phase's start), recorded; resets the mark."""
        peak = peak_gib()
        self.steps.append(round(peak, 3))
        import psutil  # see children_peak_gib

        self.resident.append(round(psutil.Process().memory_info().rss / GIB, 3))
        self.step_shapes.append(take_step())
        self._running = max(self._running, peak)
        reset_peak()
        self.save()
        return peak

    @contextmanager
    def marking_steps(self) -> Iterator[None]:
        """`mark_step` after every optimizer step while the block runs: an optimizer step
        hook, so torch calls it, whichever optimizer the trainer makes."""
        from torch.optim.optimizer import register_optimizer_step_post_hook  # torch: here only

        handle = register_optimizer_step_post_hook(lambda *_: self.mark_step())
        try:
            yield
        finally:
            handle.remove()


@contextmanager
def timed(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the seconds the block takes to `phases[name]`; a `RunClock` also records the
    block's peak resident memory."""
    started = time.monotonic()
    if isinstance(phases, RunClock):
        phases.start_phase()
    try:
        yield
    finally:
        phases[name] = round(phases.get(name, 0.0) + time.monotonic() - started, 1)
        if isinstance(phases, RunClock):
            phases.end_phase(name)


def watch_training(model: Any) -> None:
    """Note each training forward's padded tokens (`note_training`), from a forward pre-hook
    on `model`: where the trainer makes the model, not in its loss."""

    def note(module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if module.training and getattr(ids, "ndim", 0) == 2:
            note_training(int(ids.shape[0] * ids.shape[1]))

    model.register_forward_pre_hook(note, with_kwargs=True)
