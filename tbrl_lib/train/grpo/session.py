"""`TrainingSession`: the objects one GRPO run is made of, built in one constructor and named.

    tasks, index     what the run trains on (`task_set.py`), and prompt -> task for TRL;
    task_defects     tasks left out because their own image does not build (id -> reason)
    rollout, judge   the run's `RolloutConfig` (sandboxes labelled with its run id) and judge
    tokenizer, model the policy model as `GRPOTrainer` takes it (a path or an unsloth model,
                     with its PEFT config: `model_loader.py`)
    curriculum       which tasks the next steps train on, and the filtering counts
    policy           the trainer's `TrainerPolicy`: the one token-exact renderer over the
                     trainer's weights (bound when the trainer exists: `SessionTrainer`)
    runner           the step's rollouts by `policy` (`StepRunner`), with its hooks: the
                     infra-rate stop, dynamic sampling, the gather across processes
                     (`hooks.py`) and riding out an engine outage (`engine_outage.py`);
                     `rollout_func` is its TRL face
    metrics, stop, heldout
                     the run's callbacks: metrics.jsonl, the all-filtered stop, held-out
                     evaluations during training
    tracked          numbers a callback measured in this step (the held-out `eval/…`): the
                     trainer logs them with the step's own (`SessionTrainer.log`)

Nothing here depends on which trainer drives it: the synchronous `SessionTrainer` reads the
session, and another producer of rollouts (an asynchronous worker) can reuse `runner`,
`curriculum` and the policy seam below its queue. Left out: building the trainer
(`trainer.py`), the warm start and the summary (`train()` in `run.py`).
"""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset
from transformers import AutoTokenizer

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.rewards import judge_for
from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.grpo.task_set import dataset_rows, prebuild_images, select_tasks
from tbrl_lib.train.heldout.evaluator import HeldoutDuringTraining, HeldoutEvaluator
from tbrl_lib.train.model.model_loader import load_policy
from tbrl_lib.train.model.trainer_policy import TrainerPolicy
from tbrl_lib.train.plan.memory_plan import generation_token_budget
from tbrl_lib.train.report.callbacks import CurriculumStop, MetricsWriter, StepClock
from tbrl_lib.train.step.curriculum import Curriculum
from tbrl_lib.train.step.engine_outage import EngineWait
from tbrl_lib.train.step.hooks import (
    DynamicSampling,
    InfraErrorGuard,
    gather_across,
    process_state,
    rank_suffix,
)
from tbrl_lib.train.step.runner import (
    RolloutFunc,
    RunnerSettings,
    StepRunner,
    TaskIndex,
)


class TrainingSession:
    """One GRPO run's tasks, model, policy, rollout runner, curriculum and evaluators."""

    def __init__(
        self,
        config: TrainConfig,
        out: Path,
        model_path: str,
        rollout: RolloutConfig,
        heldout: HeldoutEvaluator | None = None,
        resume_step: int | None = None,
    ) -> None:
        self.config, self.out, self.model_path = config, out, model_path
        processes = process_state()
        self.rollout = rollout
        self.judge = judge_for(rollout.reward)  # a judge that cannot run here is refused now
        with processes.local_main_process_first():  # one process per node builds its images
            self.tasks, self.task_defects = prebuild_images(
                select_tasks(config.data), rollout.sandbox
            )
        self.rows = dataset_rows(self.tasks, rollout.episode)
        self.index = TaskIndex(self.rows)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model, self.peft_config = load_policy(config, model_path)
        self.curriculum = Curriculum(
            {t.id: t.difficulty.value for t in self.tasks},
            config.curriculum.filter_after_groups,
            retry_after_steps=config.curriculum.retry_skipped_after_steps,
        )
        self.policy = TrainerPolicy(
            self.tokenizer,
            config.launch.generation_backend,
            config.grpo.temperature,
            config.grpo.top_p,
            rollout.episode.max_total_tokens,
            config.model.enable_thinking,
            generation_token_budget(config),
        )
        self.runner = StepRunner(
            RunnerSettings(
                self.policy,
                rollout,
                self.judge,
                self.curriculum,
                concurrency=config.launch.sandbox_concurrency,
                stub_prompt_ids=self.first_prompt_ids,
                eos_id=self.tokenizer.eos_token_id,
                infra=InfraErrorGuard(config.grpo.max_infra_error_rate, config.rollouts_per_step),
                gather=gather_across,
                sampling=self._dynamic_sampling(),
                outage=EngineWait.for_run(config, out),
                trajectories_dir=out / "trajectories",
                trajectories_suffix=rank_suffix(),
            )
        )
        self.rollout_func = RolloutFunc(self.index, self.runner)
        # The trainer logs curriculum/ and eval/ numbers itself, so every tracker sees them.
        self.metrics = MetricsWriter(
            out / "metrics.jsonl", resume_step, main=processes.is_main_process
        )
        self.tracked: dict[str, float] = {}
        self.stop = CurriculumStop(self.curriculum)
        self.heldout = heldout
        self.heldout_during = (
            HeldoutDuringTraining(heldout, self.policy, config.heldout.every, self.tracked)
            if heldout and config.heldout.every
            else None
        )

    def _dynamic_sampling(self) -> DynamicSampling | None:
        curriculum = self.config.curriculum
        if not curriculum.dynamic_sampling:
            return None
        group = self.config.grpo.num_generations
        return DynamicSampling(self.curriculum, self.tasks, group, curriculum.refill_rounds)

    @property
    def dataset(self) -> Dataset:
        """The trainer's dataset: TRL hands every column to the reward functions (and prints
        them in warnings), and the task JSON is in the `TaskIndex` already, so it stays out."""
        return Dataset.from_list([{k: v for k, v in r.items() if k != "task"} for r in self.rows])

    def first_prompt_ids(self, task: Task) -> list[int]:
        """The token ids of `task`'s first prompt, as the policy renders it."""
        return self.policy.chat.prompt_ids(initial_messages(task, self.rollout.episode))

    def callbacks(self) -> list:
        """The run's own TRL callbacks, in the order they run at each step (the clock after
        the held-out evaluation: its time is the step's)."""
        callbacks = (self.metrics, self.stop, self.heldout_during, StepClock(self.tracked))
        return [c for c in callbacks if c is not None]

    def final_evaluation(self, step: int, final: Path) -> dict:
        """The final model's held-out evaluation: the last step's, which measured these
        weights already, else one of the saved model at `final`."""
        assert self.heldout is not None
        last = self.heldout_during.results.get(step) if self.heldout_during else None
        if last is None:
            return self.heldout.evaluate_checkpoint(final, "final", self.config.seed)
        return last | {"bundled": self.heldout.evaluate_bundled(self.policy, "final")}
