"""The process's memory: the peak of each phase of a run, read from the kernel, beside the
plan; and the allocator told to give freed memory back (`return_freed_memory`).

At a phase's start the process's high-water mark (`VmHWM`) is reset by writing `5` to
`/proc/self/clear_refs`; at its end `VmHWM` in `/proc/self/status` is that phase's peak.
The kernel keeps it at every page fault, so a spike of one step is caught exactly, with no
sampler thread. Inside GRPO, `report.callbacks.StepMemory` reads and resets it at the end of
every optimizer step, so `RunClock.steps` holds each step's peak and `RunClock.resident`
what stayed resident after it (growth: the last step beside step 2; a step's peak also
follows the length of its longest rollouts, what stays resident after it does not).
Each phase's largest batches (`tbrl_lib.batch_shapes`) are kept beside its peak
(`RunClock.shapes`), so the planner can re-plan the phase at the shape it reached.
Child processes (a vLLM server the run started) are counted apart: the sum of their own
`VmHWM` at the phase's end. Where the reset is not allowed (not Linux, a locked-down
/proc), peaks are the process's peak so far (`ru_maxrss`), said by `RunClock.resettable`.

No torch or transformers here: preflight imports the planner, which imports this, before
unsloth (which must come before transformers).

Left out: GPU memory (`gpu_memory.measured_peak_gib` reports torch's peak), memory of
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
from pathlib import Path

import psutil

from tbrl_lib import batch_shapes

GIB = 2**30
STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")
OVER_PLAN = 0.15
"""A phase whose peak passes its plan by more than this share is named on the console."""


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
        batch_shapes.reset()
        self._running = 0.0

    def end_phase(self, name: str) -> None:
        peak = max(self._running, peak_gib())
        self.peaks[name] = round(max(self.peaks.get(name, 0.0), peak), 3)
        children = children_peak_gib()
        if children:
            self.children[name] = round(children, 3)
        if reached := batch_shapes.reached():
            self.shapes[name] = reached
        self.save()

    def mark_step(self) -> float:
        """The peak since the last step (or the phase's start), recorded; resets the mark."""
        peak = peak_gib()
        self.steps.append(round(peak, 3))
        self.resident.append(round(psutil.Process().memory_info().rss / GIB, 3))
        self.step_shapes.append(batch_shapes.take_step())
        self._running = max(self._running, peak)
        reset_peak()
        self.save()
        return peak


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


def phase_table(planned: dict[str, float], clock: RunClock) -> dict[str, dict[str, float]]:
    """summary.json's `memory.phases`: per measured phase, its plan (None: none) and peak."""
    rows: dict[str, dict[str, float]] = {}
    for name, peak in clock.peaks.items():
        row = {"planned_gib": planned.get(name), "peak_gib": round(peak, 2)}
        if name in clock.children:
            row["children_peak_gib"] = round(clock.children[name], 2)
        rows[name] = row
    return rows


def over_plan(phases: dict[str, dict[str, float]]) -> list[str]:
    """One line per phase whose peak passes its plan by more than `OVER_PLAN`."""
    lines = []
    for name, row in phases.items():
        plan, peak = row.get("planned_gib"), row["peak_gib"]
        if plan and peak > plan * (1 + OVER_PLAN):
            lines.append(
                f"memory: phase {name!r} peaked at {peak:.2f} GiB, {peak / plan - 1:+.0%} over "
                f"its plan of {plan:.2f} GiB"
            )
    return lines
