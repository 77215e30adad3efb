"""`train(preset, overrides, out_dir)`: one GRPO run with TRL, from a preset to a run folder.

    tbrl train run --preset cpu-smoke                      # laptop: minutes, real sandboxes
    tbrl train run --preset cpu-smoke --out RUN --resume latest   # continue RUN's newest checkpoint
    accelerate launch --config_file acc.yaml -m tbrl_lib.cli train run --preset 8xh100  # what `tbrl train launch` writes

The run folder explains itself:
    config.json        the TrainConfig (asdict) and the TRL GRPOConfig it became
    memory_plan.txt    the per-GPU memory estimate of the preset
    metrics.jsonl      one line per logged step; names prefixed train/, rollout/, reward/,
                       sandbox/, curriculum/, sampling/, eval/ (TRL's own names go under train/)
    trajectories/      every rollout (ids, env_mask, reward, messages, test outcomes); one file
                       per step (and per process: `-rank<i>`, when several train)
    checkpoints/       every `save_steps` steps: TRL's checkpoint + tbrl_state.json (resume.py)
    reward.png         reward over steps (components, held-out solve rate at eval steps)
    summary.json       headline numbers (read back by the notebook test)

Every rollout is `tbrl_lib.rollout.run_rollout`, the one evaluation and validation use:
the reward is 65% weighted tests + 35% judge (`judge`, `reward_w_*` in the preset).
With `sft_demos` > 0 an SFT warm start runs first (`sft/`: demos.parquet, checkpoint) and
GRPO starts from it; with `family` and `eval_tasks` > 0 the base model, the warm start, the
policy every `eval_every` steps and the final model are evaluated on held-out instances
(`eval/<name>/`, `eval/...` metrics, the before/after table in summary.json `heldout`).

Under accelerate every process runs its share of each step's rollouts; the first process of
each node builds the tiny model and the task images while the others wait; process 0 alone
writes the run folder's files (trajectories: each process its own).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tbrl_lib.models import resolve_model, tiny_size
from tbrl_lib.train.curriculum import Curriculum, CurriculumSampler
from tbrl_lib.train.model_loader import LORA_TARGETS
from tbrl_lib.train.presets import TrainConfig, load_preset
from tbrl_lib.train.processes import process_state
from tbrl_lib.train.resume import (
    ResumeError,
    checkpoint_step,
    find_checkpoint,
    read_state,
    run_folder_of,
)


def load_training_tasks(config: TrainConfig) -> list:
    """The tasks of the run: the family's training instances when `family` is set, else
    `config.tasks` (read leniently when `lenient`, printing what was skipped or changed),
    narrowed by `task_ids` and `max_tasks`."""
    from tbrl_lib.tasks import load_tasks

    if config.family:
        from tbrl_lib.train.heldout import training_tasks

        return training_tasks(config.family, config.family_tasks, config.family_difficulty)

    tasks, report = load_tasks(config.tasks, mode="lenient" if config.lenient else "strict")
    if report.skipped or report.warnings:
        print(report.summary(), flush=True)
    if config.task_ids:
        by_id = {t.id: t for t in tasks}
        missing = [t for t in config.task_ids if t not in by_id]
        if missing:
            raise ValueError(
                f"task_ids {missing} are not in {config.tasks} (it has {sorted(by_id)[:10]}...)"
            )
        tasks = [by_id[t] for t in config.task_ids]
    if config.max_tasks:
        tasks = tasks[: config.max_tasks]
    if not tasks:
        raise ValueError(f"no tasks to train on in {config.tasks}")
    return tasks


def rollout_config(config: TrainConfig, run_id: str = ""):
    """The `RolloutConfig` every training rollout runs with."""
    from tbrl_lib.agent.config import EpisodeLimits, ToolConfig
    from tbrl_lib.rewards import RewardConfig
    from tbrl_lib.rollout import RolloutConfig
    from tbrl_lib.sandbox import SandboxConfig

    hosts = [(h, max(1, config.sandbox_concurrency)) for h in config.docker_hosts]
    sandbox = SandboxConfig(
        run_id=run_id or f"train-{config.name}",
        start_timeout_s=config.sandbox_start_timeout_s,
        **({"hosts": hosts} if hosts else {}),
    )
    episode = EpisodeLimits(
        max_turns=config.max_turns,
        max_total_tokens=config.max_context_tokens,
        max_tokens_per_turn=config.max_new_tokens_per_turn,
        time_limit_s=config.episode_time_limit_s,
        tools=ToolConfig(**config.tools),
        system_prompt=config.system_prompt,
    )
    reward = RewardConfig(
        w_tests=config.reward_w_tests,
        w_judge=config.reward_w_judge,
        on_judge_missing=config.on_judge_missing,
    )
    return RolloutConfig(episode=episode, sandbox=sandbox, reward=reward)


def make_training_judge(config: TrainConfig):
    """The judge of the run (None when the reward is tests only); refuses, before step 1, a
    judge that cannot run here (no API key, no CLI)."""
    if config.reward_w_judge == 0 or config.judge == "none":
        return None
    from tbrl_lib.rewards.judges import make_judge, require_available

    judge = make_judge(config.judge)
    require_available(judge)
    return judge


def dataset_rows(tasks: list, limits) -> list[dict[str, Any]]:
    from tbrl_lib.agent.prompts import initial_messages
    from tbrl_lib.tasks.parquet_format import task_to_record

    return [task_to_record(task, lambda t: initial_messages(t, limits)) for task in tasks]


def grpo_args(config: TrainConfig, out_dir: Path):
    """The TRL `GRPOConfig` for `config`."""
    from trl import GRPOConfig

    from tbrl_lib.train.trl_rollouts import REWARD_WEIGHTS

    cpu = config.gpus_per_node == 0
    vllm = config.generation_backend.startswith("vllm")
    kwargs: dict[str, Any] = {
        "output_dir": str(out_dir / "checkpoints"),
        "max_steps": config.max_steps,
        "optim": config.optimizer,
        "learning_rate": config.learning_rate,
        "lr_scheduler_type": config.lr_scheduler,
        "warmup_steps": config.warmup_steps,
        "max_grad_norm": config.max_grad_norm,
        "per_device_train_batch_size": config.per_device_batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "num_generations": config.num_generations,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_completion_length": config.max_context_tokens,
        "loss_type": config.loss_type,
        "beta": config.beta,
        "scale_rewards": config.scale_rewards,
        "bf16": config.dtype == "bf16" and not cpu,
        "fp16": config.dtype == "fp16",
        "use_cpu": cpu,
        "gradient_checkpointing": config.gradient_checkpointing,
        "seed": config.seed,
        "logging_steps": 1,
        "report_to": config.report_to or "none",  # event files under checkpoints/runs/
        "push_to_hub": config.push_to_hub,
        "hub_model_id": config.hub_model_id,
        "disable_tqdm": False,
        "save_strategy": "steps" if config.save_steps else "no",
        "save_steps": config.save_steps or 500,
        # The curriculum sampler is no fixed order: a resumed run replays its saved state
        # (`restore_run`) instead of skipping the batches already trained on.
        "ignore_data_skip": config.curriculum,
        "shuffle_dataset": False,
        "dataloader_num_workers": 0,
        "use_vllm": vllm,
        "log_completions": False,
        "reward_weights": list(REWARD_WEIGHTS),
    }
    if vllm:
        kwargs.update(
            vllm_mode="colocate" if config.generation_backend == "vllm-colocate" else "server",
            vllm_gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            vllm_tensor_parallel_size=config.vllm_tensor_parallel_size,
            vllm_max_model_length=config.max_context_tokens,
            vllm_importance_sampling_mode=f"{config.vllm_is_level}_truncate",
            vllm_importance_sampling_clip_max=config.vllm_is_cap,
        )
        if config.vllm_server_url:
            kwargs["vllm_server_base_url"] = os.path.expandvars(config.vllm_server_url)
    if cpu:
        kwargs["model_init_kwargs"] = {"dtype": "float32"}
    elif config.dtype == "bf16":
        kwargs["model_init_kwargs"] = {"dtype": "bfloat16"}
    return GRPOConfig(**kwargs)


def train(
    preset: str = "cpu-smoke",
    overrides: dict[str, Any] | None = None,
    out_dir: str | Path = "",
    config: TrainConfig | None = None,
    resume: str | Path = "",
) -> dict[str, Any]:
    """Run GRPO for `preset` (+ `overrides`); returns the summary also written to summary.json.
    `resume`: `latest` (the newest checkpoint of `out_dir`) or a checkpoint folder to continue."""
    from tbrl_lib.notebook_tools import record_summary, run_dir
    from tbrl_lib.train.heldout_eval import EvalPlan, HeldoutEval, before_after_table
    from tbrl_lib.train.memory import memory_report, plan_text
    from tbrl_lib.train.reporting import MetricsWriter, plot_rewards, write_config

    config = config or load_preset(preset, overrides)
    checkpoint = find_checkpoint(resume, out_dir, config) if resume else None
    out = run_dir(
        out_dir or (run_folder_of(checkpoint) if checkpoint else ""), f"train-{config.name}"
    )
    started = time.monotonic()
    main_process = process_state()
    if main_process.is_main_process:
        write_config(out / "config.json", config)
        (out / "memory_plan.txt").write_text(plan_text(config) + "\n")
    rollout = rollout_config(config, run_id=f"train-{config.name}-{os.getpid()}")
    plan = EvalPlan.for_run(config, rollout, out / "eval")
    with main_process.local_main_process_first():  # one process per node builds the tiny model
        model_path = resolve_model(config.model)
    evals: dict[str, Any] = {}
    warm: dict[str, Any] | None = None
    try:
        if plan and not checkpoint:
            evals["base"] = plan.evaluate_checkpoint(model_path, "base", config.seed)
        if checkpoint and (out / "sft" / "checkpoint").is_dir():  # GRPO started from it
            model_path = str(out / "sft" / "checkpoint")
        elif config.sft_demos:
            warm = warm_start(config, model_path, out / "sft", rollout)
            model_path = warm["checkpoint"]
            if plan:
                evals["warm start"] = plan.evaluate_checkpoint(model_path, "sft", config.seed)
        trainer, state = build_trainer(config, out, rollout, model_path)
        if checkpoint:
            restore_run(trainer, state, checkpoint)
        if main_process.is_main_process:
            write_config(out / "config.json", config, trainer.args)
        writer = MetricsWriter(
            out / "metrics.jsonl",
            state.get("curriculum"),
            resume_step=checkpoint_step(checkpoint) if checkpoint else None,
            main=main_process.is_main_process,
        )
        trainer.add_callback(writer)
        during = None
        if plan and config.eval_every:
            during = HeldoutEval(plan, state["policy_box"], config.eval_every, writer.pending)
            trainer.add_callback(during)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        if config.save_steps or tiny_size(config.model) or plan:
            save_final(trainer, config, out / "final")
        if plan:  # the last step's evaluation already measured the final weights
            last = during.results.get(trainer.state.global_step) if during else None
            evals["grpo"] = last or plan.evaluate_checkpoint(out / "final", "final", config.seed)
    finally:
        _close_sandbox_pools()
    records = writer.records
    if main_process.is_main_process:
        before = {n: e["metrics"]["eval/solve_rate"] for n, e in evals.items() if n != "grpo"}
        plot_rewards(records, out / "reward.png", before)
    rewards = [r["reward/total"] for r in records if r.get("reward/total") is not None]
    summary = {
        "preset": config.name,
        "model": config.model,
        "model_path": state["model_path"],
        "steps": trainer.state.global_step,
        "rollouts": sum(r.get("rollout/count", 0) for r in records),
        "mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
        "infra_error_rate": _mean(r.get("rollout/infra_error_rate", 0.0) for r in records),
        "skipped_tasks": state["curriculum"].skipped() if state.get("curriculum") else {},
        "task_defects": state.get("task_defects", {}),
        "stopped_early": state.get("stop_reason"),
        "filtering": state["curriculum"].report() if state.get("curriculum") else [],
        "reward_trend": reward_trend(records),
        "dynamic_sampling": sampling_totals(records),
        "warm_start": _warm_summary(warm),
        "heldout": before_after_table(evals) if evals else [],
        "memory": memory_report(config),
        "wall_seconds": round(time.monotonic() - started, 1),
        "run_dir": str(out),
    }
    if main_process.is_main_process:
        record_summary(out, summary)
    return summary


def save_final(trainer, config: TrainConfig, path: Path) -> None:
    """The final model as an ordinary model folder (what `hf:PATH`, `model:` and the held-out
    evaluation load): a one-process LoRA run merges its adapter into the weights first
    (training is over); other runs save what TRL saves."""
    if not (config.use_lora and config.num_processes == 1):
        trainer.save_model(str(path))
        return
    trainer.model.merge_and_unload().save_pretrained(str(path))
    trainer.processing_class.save_pretrained(str(path))


def restore_run(trainer, state: dict[str, Any], checkpoint: Path) -> None:
    """tbrl's part of a resume (TRL restores model, optimizer, scheduler and RNG): the
    curriculum, the rollout runner's counters and, once TRL builds it, the sampler's state."""
    saved = read_state(checkpoint)
    if state.get("curriculum") is not None and saved.get("curriculum"):
        state["curriculum"].load_state_dict(saved["curriculum"])
    state["runner"].load_state_dict(saved["runner"])
    if saved.get("sampler"):
        args = trainer.args
        per_chunk = trainer.num_iterations * args.steps_per_generation
        consumed = saved["step"] * args.gradient_accumulation_steps // per_chunk
        state["sampler_box"]["resume"] = (saved["sampler"], consumed)


def warm_start(config: TrainConfig, base_path: str, out: Path, rollout) -> dict[str, Any]:
    """SFT on `sft_demos` teacher demonstrations of the family, in the run's episode."""
    from tbrl_lib.train.sft import SFTSettings, run_sft

    settings = SFTSettings(
        model=base_path,
        family=config.family or "",
        difficulty=config.family_difficulty,
        demos=config.sft_demos,
        epochs=config.sft_epochs,
        learning_rate=config.sft_learning_rate,
        seed=config.seed,
        teacher_accuracy=config.sft_teacher_accuracy,
        teacher_careful=config.sft_teacher_careful,
        # A LoRA run warm-starts with LoRA too (merged into the checkpoint GRPO loads).
        lora_rank=config.lora_rank if config.use_lora else 0,
        lora_alpha=config.lora_alpha,
        enable_thinking=config.enable_thinking,
        teacher_thinks=config.sft_teacher_thinks,
    )
    return run_sft(settings, out, rollout)


def _warm_summary(warm: dict[str, Any] | None) -> dict[str, Any] | None:
    if warm is None:
        return None
    keys = (
        "checkpoint",
        "demos",
        "demos_right",
        "demos_careful",
        "steps",
        "loss_before",
        "loss_after",
        "seconds",
    )
    return {k: warm[k] for k in keys if k in warm}


def sampling_totals(records: list[dict[str, Any]]) -> dict[str, float]:
    """Dynamic sampling over the run: mean share of flat groups before/after refill, groups
    refilled and extra rollouts (metrics are per logged step)."""
    rows = [r for r in records if "sampling/zero_std_groups" in r]
    if not rows:
        return {}
    return {
        "zero_std_groups_before": _mean(r["sampling/zero_std_groups"] for r in rows),
        "zero_std_groups_after": _mean(r.get("sampling/zero_std_after", 0.0) for r in rows),
        "refilled_groups": sum(r.get("sampling/refilled_groups", 0.0) for r in rows),
        "refill_rollouts": sum(r.get("sampling/refill_rollouts", 0.0) for r in rows),
    }


def reward_trend(records: list[dict[str, Any]], window: int = 3) -> dict[str, float]:
    """Did GRPO raise the reward: TRL's `train/reward` averaged over the first and the last
    `window` steps, their difference, and the mean share of groups with no reward variance
    (`train/frac_reward_zero_std`, after dynamic sampling's refill)."""
    rewards = [r["train/reward"] for r in records if r.get("train/reward") is not None]
    if not rewards:
        return {}
    first, last = _mean(rewards[:window]), _mean(rewards[-window:])
    return {
        f"reward_first{window}": first,
        f"reward_last{window}": last,
        "rise": last - first,
        "zero_std_share": _mean(
            r["train/frac_reward_zero_std"]
            for r in records
            if r.get("train/frac_reward_zero_std") is not None
        ),
    }


def build_trainer(config: TrainConfig, out: Path, rollout, model_path: str):
    """The GRPOTrainer with tbrl's rollout_func, reward, curriculum and callbacks, over
    `rollout` (the run's `RolloutConfig`) and the model at `model_path`."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from tbrl_lib.agent.prompts import initial_messages
    from tbrl_lib.policies.batching import BatchingGenerator
    from tbrl_lib.policies.chat import TokenChat, TokenPolicy
    from tbrl_lib.policies.hf import HFBackend
    from tbrl_lib.rollout import run_rollout
    from tbrl_lib.train.generation import VLLMBackend
    from tbrl_lib.train.reporting import CheckpointState, CurriculumStop
    from tbrl_lib.train.trl_compat import install_torch_logprob_head
    from tbrl_lib.train.trl_rollouts import RolloutRunner, TaskIndex, reward_funcs

    install_torch_logprob_head()
    tasks = load_training_tasks(config)
    judge = make_training_judge(config)
    # One process per node builds (its Docker engine's images), the others wait.
    with process_state().local_main_process_first():
        tasks, defects = prebuild_images(tasks, config)
    rows = dataset_rows(tasks, rollout.episode)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    curriculum = Curriculum(
        {t.id: t.difficulty.value for t in tasks},
        config.filter_after_groups,
        retry_after_steps=config.retry_skipped_after_steps,
    )
    policy_box: dict[str, TokenPolicy] = {}
    sampler_box: dict[str, Any] = {}
    state: dict[str, Any] = {
        "curriculum": curriculum,
        "model_path": model_path,
        "policy_box": policy_box,
        "sampler_box": sampler_box,
        "task_defects": defects,
    }
    by_id = {t.id: t for t in tasks}

    async def one_rollout(task):
        return await run_rollout(task, policy_box["policy"], rollout, judge)

    runner = RolloutRunner(
        TaskIndex(rows),
        one_rollout,
        config.sandbox_concurrency,
        fallback_prompt_ids=lambda t: TokenChat(tokenizer, config.enable_thinking).prompt_ids(
            initial_messages(t, rollout.episode)
        ),
        eos_id=tokenizer.eos_token_id,
        trajectories_dir=out / "trajectories",
        on_rollouts=curriculum.record_rollouts,
        max_infra_error_rate=config.max_infra_error_rate,
        infra_check_after=config.rollouts_per_step,
        group_size=config.num_generations,
        refill=(
            (lambda n, exclude: [by_id[t] for t in curriculum.refill_ids(n, exclude)])
            if config.dynamic_sampling
            else None
        ),
        refill_rounds=config.refill_rounds,
        on_refills=curriculum.commit_refills,
    )
    state["runner"] = runner
    peft_config = lora_config(config) if config.use_lora else None
    from tbrl_lib.train.model_loader import load_policy  # unsloth on 1xh200 when installed

    model, peft_config = load_policy(config, model_path, peft_config)
    trainer_cls = (
        curriculum_trainer(curriculum, [t.id for t in tasks], sampler_box)
        if config.curriculum
        else GRPOTrainer
    )
    trainer = trainer_cls(
        model=model,
        reward_funcs=reward_funcs(),
        args=grpo_args(config, out),
        train_dataset=Dataset.from_list([_without_task_json(r) for r in rows]),
        processing_class=tokenizer,
        rollout_func=runner,
        peft_config=peft_config,
        callbacks=[
            CurriculumStop(curriculum, state),
            CheckpointState(config, lambda: checkpoint_parts(state)),
        ],
    )
    if config.generation_backend == "hf":
        backend = HFBackend(trainer.model, tokenizer, config.temperature, config.top_p)
    else:
        backend = VLLMBackend(trainer, config.temperature, config.top_p)
    policy_box["policy"] = TokenPolicy(
        "trainer",
        TokenChat(tokenizer, config.enable_thinking),
        BatchingGenerator(backend),
        config.max_context_tokens,
    )
    return trainer, state


def _without_task_json(row: dict[str, Any]) -> dict[str, Any]:
    """The trainer's copy of a row: TRL hands every column to the reward function (and prints
    them in warnings); the task JSON is already in the `TaskIndex`, so it stays out."""
    return {k: v for k, v in row.items() if k != "task"}


def checkpoint_parts(state: dict[str, Any]) -> dict[str, Any]:
    """What `CheckpointState` saves beside each checkpoint (see `restore_run`)."""
    sampler = state["sampler_box"].get("sampler")
    return {
        "curriculum": state["curriculum"].state_dict(),
        "sampler": sampler.state_dict() if sampler is not None else None,
        "runner": state["runner"].state_dict(),
    }


def curriculum_trainer(curriculum: Curriculum, task_ids: list[str], box: dict[str, Any]):
    """A GRPOTrainer whose train sampler follows the curriculum (same layout as TRL's); the
    sampler goes into `box["sampler"]`, restored first from `box["resume"]` when set."""
    from trl import GRPOTrainer

    class CurriculumGRPOTrainer(GRPOTrainer):
        def _get_train_sampler(self, dataset=None):
            sampler = CurriculumSampler(
                task_ids,
                curriculum,
                mini_repeat_count=self.num_generations,
                tasks_per_chunk=self.args.generation_batch_size // self.num_generations,
                repeat_count=self.num_iterations * self.args.steps_per_generation,
            )
            if "resume" in box:
                sampler.load_state_dict(*box.pop("resume"))
            box["sampler"] = sampler
            return sampler

    return CurriculumGRPOTrainer


def lora_config(config: TrainConfig):
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_rank,
        lora_alpha=config.lora_alpha,
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
        target_modules=list(LORA_TARGETS),
    )


def prebuild_images(tasks: list, config: TrainConfig) -> tuple[list, dict[str, str]]:
    """Build (or find cached) every task image before step 1, with progress. Returns the
    tasks that built and, per task whose own image does not build here (`task_fault`), the
    reason: those are skipped, one line each and a count. An infrastructure failure stops the
    run as before; so does a task set none of whose tasks builds."""
    from tqdm.auto import tqdm

    from tbrl_lib.aio import run_sync
    from tbrl_lib.sandbox import SandboxError, ensure_image

    defects: dict[str, str] = {}

    async def build_all():
        for task in tqdm(tasks, desc="task images", leave=False):
            try:
                await ensure_image(task)
            except SandboxError as err:
                if not err.task_fault:
                    raise
                defects[task.id] = str(err).split("\n", 1)[0].removeprefix(f"task {task.id}: ")
                tqdm.write(f"skipping task {task.id}: its image does not build: {defects[task.id]}")

    run_sync(build_all())
    built = [t for t in tasks if t.id not in defects]
    if defects:
        print(
            f"{len(defects)} of {len(tasks)} tasks skipped (their own images do not build, see "
            f"above); training on {len(built)}",
            flush=True,
        )
    if not built:
        raise ValueError(
            f"none of the {len(tasks)} tasks of {config.tasks} builds here (first: "
            f"{next(iter(defects.values()))}); fix their Dockerfiles or train on other tasks"
        )
    return built, defects


def _close_sandbox_pools() -> None:
    from tbrl_lib.aio import run_sync
    from tbrl_lib.sandbox import close_pools

    run_sync(close_pools())


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def main(argv: list[str] | None = None) -> None:
    """`python -m tbrl_lib.train.run --preset NAME [--set KEY=VALUE ...] [--out DIR]
    [--resume latest|CHECKPOINT]` (for accelerate)."""
    from tbrl_lib.train.presets import parse_overrides

    parser = argparse.ArgumentParser(description="GRPO training of a terminal agent from a preset.")
    parser.add_argument("--preset", default="cpu-smoke")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", default="")
    parser.add_argument(
        "--resume", default="", help="`latest` (newest checkpoint of --out) or a checkpoint folder"
    )
    args = parser.parse_args(argv)
    config = load_preset(args.preset, parse_overrides(args.overrides))
    try:
        if args.resume:  # refuse before anything is built
            find_checkpoint(args.resume, args.out, config)
    except ResumeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    summary = train(config.name, out_dir=args.out, config=config, resume=args.resume)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
