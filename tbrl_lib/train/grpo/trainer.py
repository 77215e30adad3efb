"""`SessionTrainer`: TRL's `GRPOTrainer` over a `TrainingSession`, and its `GRPOConfig`.

The trainer takes everything from the session (model, tokenizer, dataset, `rollout_func`,
callbacks) and adds these of its own:

- its train sampler follows the curriculum (`CurriculumSampler`, laid out as TRL's own
  `RepeatSampler`) when `curriculum.enabled`;
- every checkpoint TRL saves gets `tbrl_state.json` (`callbacks.CheckpointState`): the run's
  settings, the curriculum, the sampler's drawn chunks, the runner's counters; `restore`
  reads them back for `--resume` (TRL restores model, optimizer, scheduler and RNG);
- once built, it binds the session's policy to its own weights or vLLM engine; with vLLM
  on one process, every weight push is checked (`vllm.sync_probe.SyncProbe`); on a CPU
  trainer, TRL's engine and weight push are the CPU ones (`vllm.cpu.on_cpu`);
- `save_final(path)` writes the final model as an ordinary model folder (a one-process
  LoRA run merges its adapter first);
- each step's log carries the curriculum's numbers and what callbacks measured in the step
  (`session.tracked`: the held-out `eval/…`), so TRL's own logging hands them to every
  tracker (`grpo.report_to`) and to metrics.jsonl at the step they belong to;
- the console shows one line per step (`callbacks.StepLines`) instead of TRL's bar/table;
- the advantages are `grpo.advantage`'s estimator's (`train/config/estimators.py`): once TRL
  has scored a batch, `_generate_and_score_completions` replaces TRL's advantages by the
  estimator's over the same rewards (TRL's, captured in `_calculate_rewards`: every process's, masked rows NaN).
  The asynchronous trainer is this class underneath, so both call the one estimator. Their
  mean size over the scored rollouts is logged (`train/advantages/abs_mean`).

`grpo_args(config, out)` is the `GRPOConfig`: each section's own keys (`trl_kwargs` of
`grpo`, `model`, `launch`) and the few that belong to the run. Left out: TRL's asynchronous
trainer (the session's runner and curriculum are its seam).
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from trl import GRPOConfig, GRPOTrainer

from tbrl_lib.process_memory import watch_training
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.estimators import advantages
from tbrl_lib.train.grpo.session import TrainingSession
from tbrl_lib.train.model.trl_compat import install_memory_fixes
from tbrl_lib.train.plan.resume import read_state
from tbrl_lib.train.report.callbacks import CheckpointState, StepLines, use_progress_lines
from tbrl_lib.train.step.curriculum import CurriculumSampler
from tbrl_lib.train.step.runner import reward_funcs
from tbrl_lib.train.vllm.cpu import on_cpu, reload_colocated
from tbrl_lib.train.vllm.sync_probe import SyncProbe

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


# The trainer.


def grpo_args(config: TrainConfig, out_dir: Path) -> GRPOConfig:
    """The TRL `GRPOConfig` for `config`: each section's own keys, and the run's."""
    launch, episode = config.launch, config.rollout.episode
    return GRPOConfig(
        output_dir=str(out_dir / "checkpoints"),
        seed=config.seed,
        max_completion_length=episode.max_total_tokens,
        # The curriculum sampler is no fixed order: a resumed run replays its saved state
        # (`SessionTrainer.restore`) instead of skipping the batches already trained on.
        ignore_data_skip=config.curriculum.enabled,
        shuffle_dataset=False,
        dataloader_num_workers=0,
        logging_steps=1,
        disable_tqdm=False,
        reward_weights=reward_funcs(config.rollout.reward)[1],  # TRL's, not the parts' weights
        **config.grpo.trl_kwargs(vllm=launch.uses_vllm),
        **config.model.trl_kwargs(cpu=launch.cpu),
        **launch.trl_kwargs(max_model_length=episode.max_total_tokens),
    )


class SessionTrainer(GRPOTrainer):
    """The GRPOTrainer of one `TrainingSession` (see the module docstring)."""

    def __init__(self, session: TrainingSession) -> None:
        install_memory_fixes()  # the chunked log-prob head, freed memory returned
        self.session = session
        self.curriculum_sampler: CurriculumSampler | None = None
        self._sampler_resume: tuple[dict[str, Any], int] | None = None
        launch = session.config.launch
        engine = (
            on_cpu(launch.vllm_cpu_kv_cache_gb, session.out / "vllm_weights")
            if launch.cpu and launch.uses_vllm
            else nullcontext()
        )
        with engine:  # TRL builds its vLLM engine or client in here
            super().__init__(
                model=session.model,
                reward_funcs=reward_funcs(session.config.rollout.reward)[0],
                args=grpo_args(session.config, session.out),
                train_dataset=session.dataset,
                processing_class=session.tokenizer,
                rollout_func=session.rollout_func,
                peft_config=session.peft_config,
                callbacks=[*session.callbacks(), CheckpointState(session.config, self.tbrl_state)],
            )
        watch_training(self.model)  # each micro-batch's tokens, for the memory report
        if launch.cpu and launch.generation_backend == "vllm-colocate":
            reload_colocated(self.vllm_generation)
        self.sync_probe: SyncProbe | None = None
        if launch.uses_vllm and launch.num_processes == 1:
            probe = session.first_prompt_ids(session.tasks[0])
            self.sync_probe = SyncProbe(self, probe, session.tracked).install()
        session.policy.bind(self)
        use_progress_lines(self, StepLines())

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """TRL's log of a step, with the curriculum's numbers and the step's `tracked` ones."""
        if "train_runtime" not in logs:  # not the end-of-training summary
            logs = {**logs, **self.session.curriculum.metrics(), **self.session.tracked}
            self.session.tracked.clear()
        super().log(logs, start_time)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """TRL's rewards of every process's rollouts, one column per reward function, kept
        for `_generate_and_score_completions`."""
        self._rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        return self._rewards_per_func

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's scored batch, with the advantages of `grpo.advantage`'s estimator."""
        output = super()._generate_and_score_completions(inputs)
        per_func = self._rewards_per_func
        weights = self.reward_weights.to(per_func.device).unsqueeze(0)
        rewards = (per_func * weights).nansum(dim=1)  # TRL's weighted sum of its functions
        rewards[torch.isnan(per_func).all(dim=1)] = torch.nan  # masked by every function
        n = self.num_generations if self.model.training else self.num_generations_eval
        every = advantages(rewards, n, self.session.config.grpo)
        scored = every[~torch.isnan(rewards)]
        mode = "train" if self.model.training else "eval"
        size = scored.abs().mean().item() if scored.numel() else 0.0
        self._metrics[mode]["advantages/abs_mean"].append(size)
        first = self.accelerator.process_index * len(inputs)  # this process's rows
        output["advantages"] = every[first : first + len(inputs)]
        logged = self._logs["advantages"]  # the completions table's column: these, not TRL's
        for _ in range(min(len(every), len(logged))):
            logged.pop()
        logged.extend(every.tolist())
        return output

    def _get_train_sampler(self, dataset=None):
        if not self.session.config.curriculum.enabled:
            return super()._get_train_sampler(dataset)
        sampler = CurriculumSampler(
            [t.id for t in self.session.tasks],
            self.session.curriculum,
            mini_repeat_count=self.num_generations,
            tasks_per_chunk=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
        )
        if self._sampler_resume is not None:
            sampler.load_state_dict(*self._sampler_resume)
        self.curriculum_sampler = sampler
        return sampler

    def save_final(self, path: Path) -> None:
        """The final model as an ordinary model folder (what `hf:PATH`, `model.name` and the
        held-out evaluation load): a one-process LoRA run merges its adapter into the
        weights first (training is over); other runs save what TRL saves."""
        config = self.session.config
        if not (config.model.use_lora and config.launch.num_processes == 1):
            self.save_model(str(path))
            return
        self.model.merge_and_unload().save_pretrained(str(path))
        self.processing_class.save_pretrained(str(path))

    def tbrl_state(self) -> dict[str, Any]:
        """What every checkpoint saves beside TRL's (see `restore`)."""
        sampler = self.curriculum_sampler
        return {
            "curriculum": self.session.curriculum.state_dict(),
            "sampler": sampler.state_dict() if sampler is not None else None,
            "runner": self.session.runner.state_dict(),
        }

    def restore(self, checkpoint: Path) -> None:
        """tbrl's part of a resume: the curriculum, the runner's counters and, once TRL
        builds it, the sampler's state (the chunks of steps already trained are skipped)."""
        saved = read_state(checkpoint)
        if saved.get("curriculum"):
            self.session.curriculum.load_state_dict(saved["curriculum"])
        self.session.runner.load_state_dict(saved["runner"])
        if saved.get("sampler"):
            per_chunk = self.num_iterations * self.args.steps_per_generation
            consumed = saved["step"] * self.args.gradient_accumulation_steps // per_chunk
            self._sampler_resume = (saved["sampler"], consumed)
