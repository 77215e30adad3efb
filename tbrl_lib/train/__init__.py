"""tbrl_lib.train: GRPO training of terminal agents with TRL.

The face notebooks import (`from tbrl_lib.train import load_preset, run_training, ...`):
each name below loads its module on first use, so a notebook refuses a preset that cannot
run here before torch or TRL is imported (`require_runnable` needs neither).

- `load_preset(name, overrides) -> TrainConfig`, `preset_names()`
- `require_runnable(config)` (raises `PreflightError`): here, or on the Slurm allocation we run in
- `run_training(config, out_dir, resume) -> summary dict`: `train()` here, or the run's roles
  on the allocation's nodes (notebook 04's entry point; `tbrl train run` calls `train`)
- `plan_text(config)`: the memory plan; `run_report` (the report's tables), `load_metrics(run)`

Deeper entry points: `grpo.training.train`, `grpo.session.TrainingSession`,
`grpo.trainer.SessionTrainer`, `step.runner.StepRunner` (a step's rollouts over
`tbrl_lib.rollout.run_rollout`), `plan.memory_plan.plan_memory`, `plan.launch`,
`rollouts.curriculum`, `warm_start.sft.warm_start`, `report.callbacks.StepLines`.

Sub-packages, each importing only those listed before it: `config`, `plan`, `model`, `vllm`,
`step`, `report`, `pipeline`, `heldout`, `warm_start`, `grpo`, `job`.
"""

import importlib
import os
from typing import Any

from tbrl_lib.trl_vllm import silence_trl_vllm_warning

# torch's CPU tensors of 2 MiB or more on transparent huge pages (a page fault per 2 MiB, not
# per 4 KiB: docs/benchmarks.md, "Memory"). torch reads it at its first large allocation, so
# it is set before this package loads torch; `THP_MEM_ALLOC_ENABLE=0` turns it off.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

# Every module that loads TRL sits below this package, so this runs before TRL's import-time
# vLLM-range check: its five identical warnings become one line (`tbrl_lib/trl_vllm.py`).
silence_trl_vllm_warning()

# name -> "module" (the module itself) or "module:attribute"
FACE = {
    "load_preset": "tbrl_lib.train.config.presets:load_preset",
    "preset_names": "tbrl_lib.train.config.presets:preset_names",
    "PreflightError": "tbrl_lib.train.grpo.preflight:PreflightError",
    "require_runnable": "tbrl_lib.train.job.placement:require_runnable",
    "plan_text": "tbrl_lib.train.plan.memory_plan:plan_text",
    "run_training": "tbrl_lib.train.job.run_training:run_training",
    "run_report": "tbrl_lib.train.report.run_report",
    "load_metrics": "tbrl_lib.train.report.run_files:load_metrics",
}
__all__ = sorted(FACE)


def __getattr__(name: str) -> Any:
    if name not in FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = FACE[name].partition(":")
    value = importlib.import_module(module)
    return getattr(value, attribute) if attribute else value
