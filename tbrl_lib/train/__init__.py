"""tbrl_lib.train: GRPO training of terminal agents with TRL.

Public API:
- `presets.load_preset(name, overrides) -> TrainConfig`, `presets.preset_names()`
- `run.train(preset, overrides, out_dir) -> summary dict` (also `tbrl train run`)
- `memory.plan_memory(config) -> MemoryPlan` (`.table()`), `launch.accelerate_config/launch_commands`
- `trl_rollouts.RolloutRunner` (TRL `rollout_func` over `tbrl_lib.rollout.run_rollout`), `trl_rollouts.reward_funcs()` (TRL reward functions)
- `curriculum.Curriculum`, `curriculum.CurriculumSampler`
"""
