"""The files one GRPO step runs through, from notebook 04's training cell.

    python benchmarks/trace_step.py            # Docker; one cpu-smoke step, about a minute

The rule, so the count is the same for anyone who runs it:

1. notebook 04's training cell, `run_training(config, out_dir=run, resume=resume)`, runs on
   `cpu-smoke` shrunk to one step of one group of two rollouts (`presets.ONE_STEP`), under
   `sys.setprofile` (and `threading.setprofile`, for the threads the step starts);
2. the step is TRL's `trainer.train()`: with `grpo.max_steps=1` its whole call is one GRPO
   step (sampler, rollouts, rewards, loss, optimizer, logging callbacks);
3. counted: the notebook; every file under `tbrl_lib/train/` whose code runs during the step
   or calls it (the frames on the stack when `trainer.train()` starts); and each file of
   another tbrl_lib package (the rollout harness, the policy's chat template, the reward, ...)
   that code under `tbrl_lib/train/` calls into directly: its entry. What those entries run
   below them is their package's own concern, not the step's spine.

Left out on purpose: building the session and the trainer (they run once, before any step),
the summary after the step, and third-party code (TRL, torch, asyncio).
"""

from __future__ import annotations

import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import tbrl_lib

LIBRARY = Path(tbrl_lib.__file__).resolve().parent
TRAIN = LIBRARY / "train"
NOTEBOOK = "notebooks/04_train.ipynb"


def _step_frame(frame: FrameType) -> bool:
    """True for TRL's `trainer.train()` (transformers' `Trainer.train`)."""
    path = frame.f_code.co_filename
    return frame.f_code.co_name == "train" and path.endswith("transformers/trainer.py")


def _library_file(path: str) -> Path | None:
    """`path` when it is a file of tbrl_lib, else None."""
    resolved = Path(path).resolve()
    return resolved if resolved.is_relative_to(LIBRARY) else None


@dataclass
class StepTrace:
    """What `trace` saw: the spine's files, each with the first function seen in it."""

    files: dict[str, str] = field(default_factory=dict)
    """Path relative to the repository -> the first function of it seen in the step."""
    _step: FrameType | None = None

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame is self._step:
            self._step = None
        if event != "call":
            return
        if self._step is None:
            if not _step_frame(frame):
                return
            self._step = frame
            outer = frame.f_back
            while outer is not None:  # the frames that called the step
                self._see_train(outer)
                outer = outer.f_back
            return
        self._see_train(frame)
        path = _library_file(frame.f_code.co_filename)
        caller = frame.f_back
        if path is None or path.is_relative_to(TRAIN) or caller is None:
            return
        caller_path = _library_file(caller.f_code.co_filename)
        if caller_path is not None and caller_path.is_relative_to(TRAIN):
            self._add(path, frame)

    def _see_train(self, frame: FrameType) -> None:
        path = _library_file(frame.f_code.co_filename)
        if path is not None and path.is_relative_to(TRAIN):
            self._add(path, frame)

    def _add(self, path: Path, frame: FrameType) -> None:
        name = str(path.relative_to(LIBRARY.parent))
        self.files.setdefault(name, frame.f_code.co_qualname)

    def listing(self) -> list[tuple[str, str]]:
        """(file, first function) rows: the notebook, then tbrl_lib/train, then the entries."""
        train = [(f, q) for f, q in self.files.items() if f.startswith("tbrl_lib/train/")]
        other = [(f, q) for f, q in self.files.items() if not f.startswith("tbrl_lib/train/")]
        return [(NOTEBOOK, "the training cell"), *sorted(train), *sorted(other)]


def trace(out_dir: Path) -> StepTrace:
    """Run notebook 04's training cell for one cpu-smoke step under the profiler."""
    from tbrl_lib.train import load_preset, run_training
    from tbrl_lib.train.config.presets import ONE_STEP

    config = load_preset("cpu-smoke", ONE_STEP)
    seen = StepTrace()
    threading.setprofile(seen.profile)
    sys.setprofile(seen.profile)
    try:
        run_training(config, out_dir=out_dir)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return seen


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = trace(Path(tmp) / "run").listing()
    for path, first in rows:
        print(f"{path}  ({first})")
    print(f"{len(rows)} files")


if __name__ == "__main__":
    main()
