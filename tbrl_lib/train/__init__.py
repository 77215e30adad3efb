"""tbrl_lib.train: GRPO training of terminal agents with TRL.

Public API:
- `presets.load_preset(name, overrides) -> TrainConfig`, `presets.preset_names()`
- `run.train(preset, overrides, out_dir) -> summary dict` (also `tbrl train run`)
- `memory.plan_memory(config) -> MemoryPlan` (`.table()`), `launch.accelerate_config/launch_commands`
- `rollout.RolloutRunner` (TRL `rollout_func`), `rollout.verifier_reward` (TRL reward function)
- `curriculum.Curriculum`, `curriculum.CurriculumSampler`
"""
