"""tbrl_lib.train: GRPO training of terminal agents with TRL.

Public API:
- `config.config.TrainConfig` (its sections), `config.presets.load_preset(name, overrides)`,
  `config.presets.preset_names()`
- `grpo.run.train(config, out_dir, resume) -> summary dict` (also `tbrl train run`; the
  config from `load_preset`)
- `grpo.session.TrainingSession` (tasks, model, policy, rollout runner, curriculum, evaluators),
  `grpo.trainer.SessionTrainer` (TRL's GRPOTrainer over it), `grpo.trainer.grpo_args(config, out)`
- `rollouts.step_rollouts.RolloutRunner` (a step's rollouts over `tbrl_lib.rollout.run_rollout`),
  `rollouts.step_rollouts.RolloutFunc` (TRL's `rollout_func`), `rollouts.step_rollouts.reward_funcs(reward)`
- `plan.gpu_memory.plan_memory(config) -> MemoryPlan` (`.table()`),
  `plan.launch.accelerate_config/launch_commands`
- `rollouts.curriculum.Curriculum`, `rollouts.curriculum.CurriculumSampler`,
  `warm_start.sft.warm_start(config, model, out)`
- `report.callbacks.StepLines`, `report.callbacks.SFTLines` (console lines; a step's
  numbers from its `metrics.jsonl` row through `tbrl_lib.step_progress`)

- `job.run_training.run_training(config, out_dir, resume)`: notebook 04's entry point, `train()`
  here or the run's roles on a Slurm allocation's nodes

Sub-packages, each importing only those listed before it: `config`, `plan`, `model`, `vllm`,
`rollouts`, `report`, `pipeline`, `heldout`, `warm_start`, `grpo`, `job`.
"""

import os

from tbrl_lib.trl_vllm import silence_trl_vllm_warning

# torch's CPU tensors of 2 MiB or more on transparent huge pages (a page fault per 2 MiB, not
# per 4 KiB: docs/benchmarks.md, "Memory"). torch reads it at its first large allocation, so
# it is set before this package loads torch; `THP_MEM_ALLOC_ENABLE=0` turns it off.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

# Every module that loads TRL sits below this package, so this runs before TRL's import-time
# vLLM-range check: its five identical warnings become one line (`tbrl_lib/trl_vllm.py`).
silence_trl_vllm_warning()
