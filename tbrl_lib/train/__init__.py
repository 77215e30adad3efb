"""tbrl_lib.train: GRPO training of terminal agents with TRL.

Public API:
- `config.config.TrainConfig` (its sections), `config.presets.load_preset(name, overrides)`,
  `config.presets.preset_names()`
- `grpo.run.train(preset, overrides, out_dir) -> summary dict` (also `tbrl train run`)
- `grpo.session.TrainingSession` (tasks, model, policy, rollout runner, curriculum, evaluators),
  `grpo.trainer.SessionTrainer` (TRL's GRPOTrainer over it), `grpo.trainer.grpo_args(config, out)`
- `rollouts.step_rollouts.RolloutRunner` (a step's rollouts over `tbrl_lib.rollout.run_rollout`),
  `rollouts.step_rollouts.RolloutFunc` (TRL's `rollout_func`), `rollouts.step_rollouts.reward_funcs(reward)`
- `plan.gpu_memory.plan_memory(config) -> MemoryPlan` (`.table()`),
  `plan.launch.accelerate_config/launch_commands`
- `rollouts.curriculum.Curriculum`, `rollouts.curriculum.CurriculumSampler`,
  `warm_start.sft.warm_start(config, model, out)`
- `report.callbacks.StepLines`, `report.callbacks.SFTLines` (console lines),
  `report.callbacks.heldout_line(name, metrics)`

Sub-packages, each importing only those listed before it: `config`, `plan`, `model`, `vllm`,
`rollouts`, `report`, `pipeline`, `warm_start`, `grpo`.
"""
