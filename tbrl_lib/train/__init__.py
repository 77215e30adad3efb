"""tbrl_lib.train: GRPO training of terminal agents with TRL.

Public API:
- `config.TrainConfig` (its sections), `presets.load_preset(name, overrides)`, `presets.preset_names()`
- `run.train(preset, overrides, out_dir) -> summary dict` (also `tbrl train run`)
- `session.TrainingSession` (tasks, model, policy, rollout runner, curriculum, evaluators),
  `trainer.SessionTrainer` (TRL's GRPOTrainer over it), `trainer.grpo_args(config, out)`
- `rollout_runner.RolloutRunner` (a step's rollouts over `tbrl_lib.rollout.run_rollout`),
  `trl_rollouts.RolloutFunc` (TRL's `rollout_func`), `trl_rollouts.reward_funcs()`
- `memory.plan_memory(config) -> MemoryPlan` (`.table()`), `launch.accelerate_config/launch_commands`
- `curriculum.Curriculum`, `curriculum.CurriculumSampler`, `sft.warm_start(config, model, out)`
- `progress.StepLines`, `progress.SFTLines` (console lines), `progress.heldout_line(name, metrics)`
"""
