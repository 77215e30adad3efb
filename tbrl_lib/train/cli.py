"""`tbrl train ...`: run a preset, print its memory plan, write its launch files.

tbrl train run --preset cpu-smoke [--set max_steps=1] [--out DIR] [--resume latest|CHECKPOINT]
tbrl train run --preset cpu-smoke --tasks DIR [--lenient]   (a task set of one's own)
tbrl train sft --family write_word --demos 96 --out DIR   (oracle demos -> SFT checkpoint)
tbrl train presets
tbrl train plan --preset 32xh100
tbrl train launch 32xh100 --out launch/   (accelerate.yaml, commands.sh, job.sbatch)
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tbrl_lib.tasks.console import LENIENT_HELP

app = typer.Typer(no_args_is_help=True)


def _config(preset: str, overrides: list[str]):
    from tbrl_lib.train.presets import load_preset, parse_overrides

    try:
        return load_preset(preset, parse_overrides(overrides))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--preset/--set") from exc


PresetOpt = typer.Option("cpu-smoke", "--preset", help="Preset name (see `tbrl train presets`).")
PresetArg = typer.Argument("", show_default=False, help="Preset name; same as --preset.")
SetOpt = typer.Option([], "--set", help="Override a setting: KEY=VALUE (YAML value).")
TasksOpt = typer.Option(
    None,
    "--tasks",
    help="Train on this task source (a Harbor/TB1 dir or a dir of them, a CSV, a Parquet) "
    "instead of the preset's: `--set tasks=DIR task_ids=[]`.",
)
LenientOpt = typer.Option(False, "--lenient", help=LENIENT_HELP + " (`--set lenient=true`)")


def task_overrides(tasks: Path | None, lenient: bool, overrides: list[str]) -> list[str]:
    """`--tasks` / `--lenient` as the `--set` items they stand for (so launch files repeat
    them): a task source of one's own replaces the preset's, and its task_ids (unless set)."""
    extra = []
    if tasks is not None:
        extra.append(f"tasks={json.dumps(str(tasks))}")
        if not any(item.partition("=")[0].strip() == "task_ids" for item in overrides):
            extra.append("task_ids=[]")
    if lenient:
        extra.append("lenient=true")
    return [*overrides, *extra]


def refuse_family_with_tasks(config, tasks: Path | None) -> None:
    """A preset that trains on a procedural family never reads `tasks`: say so, not ignore it."""
    if tasks is not None and config.family:
        raise typer.BadParameter(
            f"preset {config.name} trains on instances of the procedural family "
            f"{config.family!r} (its warm start and held-out evaluation need them), not on a "
            "task folder: use a preset without a family (e.g. --preset cpu-smoke), or add "
            "--set family=null sft_demos=0 eval_tasks=0",
            param_hint="--tasks",
        )


LaunchOutOpt = typer.Option(
    Path("launch"), "--out", help="Folder for accelerate.yaml and commands.sh."
)


@app.command("run")
def run_cmd(
    preset: str = PresetOpt,
    overrides: list[str] = SetOpt,
    out: str = typer.Option("", help="Run folder (default outputs/train-<preset>-<time>)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print preflight, memory plan and launch commands; run nothing."
    ),
    resume: str = typer.Option(
        "",
        "--resume",
        help="Continue a run: `latest` (newest checkpoint of --out) or a checkpoint folder; "
        "same preset and settings (max_steps may grow).",
    ),
    tasks: Path | None = TasksOpt,
    lenient: bool = LenientOpt,
) -> None:
    """Train with GRPO; the run folder gets config, metrics, trajectories, plot, summary.
    Tasks whose own image does not build are skipped before step 1 (one line each)."""
    from tbrl_lib.sandbox.engine import require_engine
    from tbrl_lib.train.resume import ResumeError, find_checkpoint

    overrides = task_overrides(tasks, lenient, overrides)
    config = _config(preset, overrides)
    refuse_family_with_tasks(config, tasks)
    try:
        checkpoint = find_checkpoint(resume, out, config) if resume else None
    except ResumeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    from tbrl_lib.train.preflight import PreflightError, dry_run_text, require_preflight

    if dry_run:
        typer.echo(dry_run_text(config, overrides))
        return
    if not config.docker_hosts:  # the local engine: the one-line error every command gives
        require_engine("tbrl train run")
    try:
        require_preflight(config)  # before any image build or download
    except PreflightError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    from tbrl_lib.train.model_loader import import_early

    import_early(config)  # unsloth, when this run uses it, before transformers/TRL load
    from tbrl_lib.train.run import train  # torch and TRL: only once the engine answers

    summary = train(config.name, out_dir=out, config=config, resume=checkpoint or "")
    for key, value in summary.items():
        typer.echo(f"{key}: {value}")


@app.command("sft")
def sft_cmd(
    model: str = typer.Option(
        "tiny",
        help="Model folder, packaged name (smollm2-135m), hub id, or `tiny` (the local tiny Qwen3).",
    ),
    family: str = typer.Option("write_word", help="Procedural family of the demonstrations."),
    demos: int = typer.Option(32, help="Oracle demonstrations to record (seeds --first-seed ...)."),
    first_seed: int = typer.Option(1000, help="First training seed; held-out seeds stay below it."),
    epochs: float = typer.Option(3.0, help="SFT epochs over the demonstrations."),
    lr: float = typer.Option(
        1e-3, "--lr", help="Learning rate (1e-3 suits the random tiny model)."
    ),
    teacher_accuracy: float = typer.Option(
        1.0,
        help="Share of demonstrations the teacher gets right (in the rest it writes the file in /tmp instead).",
    ),
    lora_rank: int = typer.Option(
        0, help="0: full fine-tuning; > 0: a LoRA adapter of this rank, merged into checkpoint/."
    ),
    lora_alpha: int = typer.Option(16, help="LoRA alpha (with --lora-rank)."),
    out: Path = typer.Option(Path("outputs/sft"), help="Folder for demos.parquet and checkpoint/."),
) -> None:
    """Record teacher demonstrations in sandboxes, then SFT on assistant tokens; prints the checkpoint."""
    from tbrl_lib.models import resolve_model
    from tbrl_lib.sandbox.engine import require_engine

    require_engine("tbrl train sft")
    # torch and TRL: only once the engine answers
    from tbrl_lib.train.sft import SFTSettings, run_sft

    try:
        settings = SFTSettings(
            model=model,
            family=family,
            demos=demos,
            first_seed=first_seed,
            epochs=epochs,
            learning_rate=lr,
            teacher_accuracy=teacher_accuracy,
            lora_rank=lora_rank,
            lora_alpha=lora_alpha,
        )
        resolve_model(model)  # a missing model: one line naming the fetch, before any sandbox
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    summary = run_sft(settings, out)
    keys = ("checkpoint", "demos", "demos_right", "trainable_parameters", "steps")
    for key in (*keys, "loss_before", "loss_after", "seconds"):
        typer.echo(f"{key}: {summary[key]}")


@app.command("presets")
def presets_cmd() -> None:
    """The shipped presets with their model, GPUs and rollouts per step."""
    from tbrl_lib.train.presets import load_preset, preset_names

    header = ("preset", 10), ("model", 16), ("hardware", 10), ("dist", 6), ("generation", 14)
    typer.echo(" ".join(f"{name:<{width}}" for name, width in header) + " per step")
    for name in preset_names():
        c = load_preset(name)
        nodes = c.num_nodes + c.vllm_server_nodes  # training nodes + vLLM server nodes
        gpus = "CPU" if c.gpus_per_node == 0 else f"{nodes}x{c.gpus_per_node} GPU"
        typer.echo(
            f"{name:<10} {c.model:<16} {gpus:<10} {c.distributed:<6} {c.generation_backend:<14} "
            f"{c.tasks_per_step} tasks x {c.num_generations} rollouts/step"
        )


@app.command("preflight")
def preflight_cmd(
    preset_name: str = PresetArg, preset: str = PresetOpt, overrides: list[str] = SetOpt
) -> None:
    """Check a preset against this machine and launch (exit 2 naming what is missing)."""
    from tbrl_lib.train.preflight import PreflightError, require_preflight

    config = _config(preset_name or preset, overrides)
    try:
        require_preflight(config)
    except PreflightError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    typer.echo(f"preset {config.name}: preflight ok")


@app.command("plan")
def plan_cmd(
    preset_name: str = PresetArg, preset: str = PresetOpt, overrides: list[str] = SetOpt
) -> None:
    """Per-GPU memory estimate of a preset (weights, grads, optimizer, activations, logits, vLLM)."""
    from tbrl_lib.train.memory import plan_memory

    preset = preset_name or preset

    plan = plan_memory(_config(preset, overrides))
    typer.echo(plan.table())
    raise typer.Exit(0 if plan.fits else 1)


@app.command("launch")
def launch_cmd(
    preset_name: str = PresetArg,
    preset: str = PresetOpt,
    overrides: list[str] = SetOpt,
    out: Path = LaunchOutOpt,
    nodes: str = typer.Option(
        "", "--nodes", help="Comma-separated node names for commands.sh: training nodes, then vLLM."
    ),
) -> None:
    """Write accelerate.yaml, commands.sh (per node) and job.sbatch (Slurm) for a preset."""
    from tbrl_lib.train.launch import launch_commands, write_launch_files

    config = _config(preset_name or preset, overrides)
    names = [n.strip() for n in nodes.split(",") if n.strip()]
    try:
        files = write_launch_files(config, out, overrides, names)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--nodes") from exc
    typer.echo("wrote " + ", ".join(str(p) for p in files.values()))
    commands = launch_commands(
        config, str(files["accelerate"]), f"outputs/train-{config.name}", overrides
    )
    for role, cmd in commands.items():
        typer.echo(f"{role}: {cmd}")
