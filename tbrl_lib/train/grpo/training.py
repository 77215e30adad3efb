"""`train(config, out_dir)`: one GRPO run with TRL, from a training config to a run folder.

    tbrl train run --preset cpu-smoke                      # laptop: minutes, real sandboxes
    tbrl train run --preset cpu-smoke --out RUN --resume latest   # continue RUN's newest checkpoint
    accelerate launch --config_file acc.yaml -m tbrl_lib.cli train run --preset 8xh100  # what `tbrl train launch` writes
    train(load_preset("cpu-demo", {"grpo.max_steps": 4}), "outputs/run")   # notebook 04, tests

The caller builds the config (`load_preset(name, overrides)`: a preset and its `--set` items);
`train()` reads top to bottom: the plan (config.json, memory_plan.txt), the base model and
its held-out evaluation, the warm start (`sft.demos` > 0: SFT on teacher demonstrations,
then its evaluation), the session (`session.py`: tasks, model, policy, rollout runner,
curriculum, evaluators), the trainer (`trainer.py`), the loop, the final model and its
evaluation, the summary (`summary.py`). The run folder explains itself:

    config.json        the TrainConfig (its sections) and the TRL GRPOConfig it became
    memory_plan.txt    the per-GPU memory estimate of the preset
    metrics.jsonl      one line per logged step (names: `callbacks.py`)
    trajectories/      every rollout (ids, env_mask, reward, messages, test outcomes); one file
                       per step (and per process: `-rank<i>`, when several train)
    checkpoints/       every `grpo.save_steps` steps: TRL's checkpoint + tbrl_state.json
    sft/, eval/        the warm start (demos.parquet, checkpoint), each held-out evaluation
    reward.png         reward over steps (components, held-out solve rate at eval steps)
    summary.json       headline numbers (read back by the notebook test)
    vllm_server.log    the output of the vLLM server the run started (`server.py`)
    vllm_weights/      the weights a CPU trainer last pushed to its vLLM server (`cpu.py`)

Under accelerate every process runs its share of each step's rollouts; the first process of
each node builds the tiny model and the task images while the others wait; process 0 alone
writes the run folder's files (trajectories: each process its own).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from tbrl_lib.models import resolve_model, tiny_size
from tbrl_lib.policies.vllm_engine import check_cpu_attention
from tbrl_lib.process_memory import RunClock, return_freed_memory, timed
from tbrl_lib.run_folder import run_dir
from tbrl_lib.sandbox import reap_run
from tbrl_lib.step_progress import heldout_line
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.grpo.async_trainer import AsyncSessionTrainer
from tbrl_lib.train.grpo.session import TrainingSession
from tbrl_lib.train.grpo.summary import summarize_run
from tbrl_lib.train.grpo.task_set import close_sandboxes
from tbrl_lib.train.grpo.trainer import SessionTrainer
from tbrl_lib.train.heldout.evaluator import HeldoutEvaluator
from tbrl_lib.train.plan.memory_plan import plan_text
from tbrl_lib.train.plan.resume import checkpoint_step, find_checkpoint, run_folder_of
from tbrl_lib.train.report.run_files import write_config
from tbrl_lib.train.step.hooks import process_state
from tbrl_lib.train.vllm.server import serving
from tbrl_lib.train.warm_start.sft import warm_start
from tbrl_lib.trl_vllm import installed_note


def train(config: TrainConfig, out_dir: str | Path = "", resume: str | Path = "") -> dict[str, Any]:
    """Run GRPO as `config` says; returns the summary also written to summary.json.
    `resume`: `latest` (the newest checkpoint of `out_dir`) or a checkpoint folder to continue."""
    if not isinstance(config, TrainConfig):  # the old train(preset, overrides, out_dir)
        raise TypeError(f"train() takes a TrainConfig, not {config!r}: see load_preset")
    out, checkpoint = run_folder(config, out_dir, resume)
    started, processes = time.monotonic(), process_state(cpu=config.launch.cpu)
    main = processes.is_main_process
    if main:  # the plan: what was asked for, and whether it fits
        write_plan(config, out)
    rollout = config.rollout.for_run(run_label(config, out))
    heldout = HeldoutEvaluator.for_run(config, rollout, out / "eval", out)
    evals: dict[str, Any] = {}
    warm: dict[str, Any] | None = None
    return_freed_memory()  # freed activations back to the kernel, not kept by malloc
    # seconds and peak memory per part of the run (summary.json), kept as it goes
    phases = RunClock(out / "memory_phases.json" if main else None)
    try:
        with processes.local_main_process_first():  # one process per node builds the tiny model
            model_path = resolve_model(config.model.name)
        if config.launch.cpu and config.launch.uses_vllm:  # before any time is spent
            check_cpu_attention(model_path)
        if heldout and not checkpoint:
            with timed(phases, "base evaluation"):
                evals["base"] = heldout.evaluate_checkpoint(model_path, "base", config.seed)
            say(heldout_line("base", evals["base"]["metrics"]), main)
        if checkpoint and (out / "sft" / "checkpoint").is_dir():  # GRPO started from it
            model_path = str(out / "sft" / "checkpoint")
        elif config.sft.demos:
            with timed(phases, "warm start"):
                warm = warm_start(config, model_path, out / "sft", rollout)
            model_path = warm["checkpoint"]
            if heldout:
                with timed(phases, "warm start evaluation"):
                    evals["warm start"] = heldout.evaluate_checkpoint(
                        model_path, "sft", config.seed
                    )
                say(heldout_line("warm start", evals["warm start"]["metrics"]), main)
        resume_step = checkpoint_step(checkpoint) if checkpoint else None
        session = TrainingSession(config, out, model_path, rollout, heldout, resume_step)
        with serving(config, model_path, out / "vllm_server.log"):  # vllm-server on one machine
            trainer = build_trainer(session, checkpoint, main)
            with timed(phases, "grpo"), phases.marking_steps():
                trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        if config.grpo.save_steps or tiny_size(config.model.name) or heldout:
            trainer.save_final(out / "final")
        if heldout:
            with timed(phases, "final evaluation"):
                evals["grpo"] = session.final_evaluation(trainer.state.global_step, out / "final")
            say(heldout_line("final", evals["grpo"]["metrics"]), main)
    finally:
        close_sandboxes()
        if main:  # what a lost node or a killed process left of this run
            for line in reap_run(rollout.sandbox):
                say(line, main)
    phases["total"] = round(time.monotonic() - started, 1)
    return summarize_run(session, trainer.state.global_step, evals, warm, phases, main)


def run_folder(
    config: TrainConfig, out_dir: str | Path, resume: str | Path
) -> tuple[Path, Path | None]:
    """The run folder (`out_dir`, the resumed run's, or a new `outputs/train-<preset>-<time>`)
    and the checkpoint to continue from (None: a fresh run)."""
    checkpoint = find_checkpoint(resume, out_dir, config) if resume else None
    folder = out_dir or (run_folder_of(checkpoint) if checkpoint else "")
    return run_dir(folder, f"train-{config.preset}"), checkpoint


def run_label(config: TrainConfig, out: Path) -> str:
    """The run's `tbrl.run` label, the same in every process of the run (its run folder's)."""
    digest = hashlib.sha1(str(out.resolve()).encode()).hexdigest()[:10]
    return f"train-{config.preset}-{digest}"


def write_plan(config: TrainConfig, out: Path) -> None:
    """config.json and memory_plan.txt (what was asked for, whether it fits), and the one line
    about TRL's tested vLLM range when this machine is outside it."""
    write_config(out / "config.json", config)
    (out / "memory_plan.txt").write_text(plan_text(config) + "\n")
    if note := installed_note():
        say(f"note: {note}", True)


def build_trainer(session: TrainingSession, checkpoint: Path | None, main: bool) -> SessionTrainer:
    """TRL's trainer over the session (the asynchronous one with `grpo.async_rollouts`),
    restored from `checkpoint` when resuming; config.json gains the GRPOConfig it became."""
    config = session.config
    trainer = (AsyncSessionTrainer if config.grpo.async_rollouts else SessionTrainer)(session)
    if checkpoint:
        trainer.restore(checkpoint)
    if main:
        write_config(session.out / "config.json", config, trainer.args)
    return trainer


def say(line: str, main: bool) -> None:
    """A progress line on the console (process 0 only)."""
    if main:
        print(line, flush=True)
