"""Resuming a GRPO run: which checkpoint, and whether this run may continue it.

    tbrl train run --preset cpu-smoke --out outputs/my-run --resume latest
    tbrl train run --preset cpu-smoke --resume outputs/my-run/checkpoints/checkpoint-40

A checkpoint is TRL's folder `<run>/checkpoints/checkpoint-<step>` (model, optimizer,
scheduler, RNG, trainer state: `Trainer.train(resume_from_checkpoint=...)` restores them)
plus `tbrl_state.json`, which `callbacks.CheckpointState` writes last: the run's settings,
the curriculum, the sampler's drawn chunks and the rollout runner's counters. A folder
without it (the run died while saving) is not a checkpoint. Settings must match the run
being resumed, except those in `MAY_DIFFER` (dotted keys: a run may be extended, or its sandboxes
moved to another engine or cluster). Standard library only: the CLI refuses before torch loads.
Left out: resuming the SFT warm start or the held-out evaluations of the base model (a
resumed run starts from the GRPO checkpoint; its summary's before/after table has the
evaluations run after the resume).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tbrl_lib.train.config.presets import flat_settings

STATE_NAME = "tbrl_state.json"
CHECKPOINT_PREFIX = "checkpoint-"
MAY_DIFFER = frozenset(
    {
        "grpo.max_steps",
        "grpo.save_steps",
        "grpo.report_to",
        "grpo.push_to_hub",
        "grpo.hub_model_id",
        "rollout.sandbox.backend",
        "rollout.sandbox.docker.max_concurrency",
        "rollout.sandbox.ray.address",
        "rollout.sandbox.ray.keep_idle_s",
        "rollout.sandbox.start_timeout_s",
        "rollout.sandbox.engine_wait_s",
        "launch.sandbox_concurrency",
        "launch.sandbox_units_per_node",
        "launch.vllm_server_url",
    }
)
"""Settings a resumed run may change: its length, saving, tracking and where sandboxes run."""


class ResumeError(ValueError):
    """`--resume` names no usable checkpoint; the message says which and what to do."""


def run_folder_of(checkpoint: Path) -> Path:
    """The run folder holding `<run>/checkpoints/checkpoint-<step>`."""
    return Path(checkpoint).parent.parent


def checkpoint_step(checkpoint: Path) -> int:
    return int(Path(checkpoint).name.removeprefix(CHECKPOINT_PREFIX))


def complete_checkpoints(run_folder: Path) -> list[Path]:
    """The run's checkpoints that were saved to the end, oldest first."""
    folder = Path(run_folder) / "checkpoints"
    found = [
        p
        for p in folder.glob(f"{CHECKPOINT_PREFIX}*")
        if p.name.removeprefix(CHECKPOINT_PREFIX).isdigit() and (p / STATE_NAME).is_file()
    ]
    return sorted(found, key=checkpoint_step)


def find_checkpoint(resume: str | Path, out_dir: str | Path, config: Any) -> Path:
    """The checkpoint `--resume` names (`latest`: the newest one of the run folder `out_dir`),
    checked against `config` (a `TrainConfig`); raises `ResumeError` saying what is wrong."""
    if str(resume) == "latest":
        if not out_dir:
            raise ResumeError("--resume latest needs --out RUN_FOLDER (the run to continue)")
        found = complete_checkpoints(Path(out_dir))
        if not found:
            raise ResumeError(
                f"--resume latest: no checkpoint in {Path(out_dir) / 'checkpoints'} (a run saves "
                "one every grpo.save_steps steps; set grpo.save_steps > 0 to make resumable runs)"
            )
        path = found[-1]
    else:
        path = Path(resume)
        if not (path / STATE_NAME).is_file():
            raise ResumeError(
                f"--resume {path}: not a complete tbrl checkpoint (no {STATE_NAME}); pass a "
                "<run>/checkpoints/checkpoint-N folder, or --resume latest --out <run>"
            )
    check_same_run(path, config)
    return path


def check_same_run(checkpoint: Path, config: Any) -> None:
    """Refuse a checkpoint saved under another preset or other settings (`MAY_DIFFER` aside)."""
    saved = read_state(checkpoint)["config"]
    if "grpo" not in saved:
        raise ResumeError(
            f"--resume {checkpoint}: saved by an older tbrl with flat settings; it cannot be "
            "continued with sectioned ones: start a new run folder"
        )
    there, here = flat_settings(saved), flat_settings(config.to_dict())
    differ = [k for k in sorted(set(there) | set(here)) if k not in MAY_DIFFER]
    differ = [k for k in differ if there.get(k) != here.get(k)]
    if differ:
        shown = ", ".join(f"{k}: {there.get(k)!r} there, {here.get(k)!r} here" for k in differ[:3])
        raise ResumeError(
            f"--resume {checkpoint}: saved by preset {saved.get('preset')!r} with other settings "
            f"({shown}); resume with that run's --preset and --set, or start a new run folder"
        )


def read_state(checkpoint: Path) -> dict[str, Any]:
    return json.loads((Path(checkpoint) / STATE_NAME).read_text())


def write_state(checkpoint: Path, state: dict[str, Any]) -> Path:
    """Write `tbrl_state.json` atomically (it marks the checkpoint complete)."""
    path = Path(checkpoint) / STATE_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, default=str))
    os.replace(tmp, path)
    return path
