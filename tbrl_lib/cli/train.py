"""`tbrl train ...`: run a preset, print its memory plan, write its launch files (thin over
`tbrl_lib.train`; torch and TRL load only once a run is accepted: `run.py`, `sft.py`).

tbrl train run --preset cpu-smoke [--set grpo.max_steps=1] [--out DIR] [--resume latest|CHECKPOINT]
tbrl train run --preset cpu-smoke --tasks DIR [--lenient]   (a task set of one's own)
tbrl train sft --preset cpu-demo [--set sft.demos=96] --out DIR   (teacher demos -> SFT checkpoint)
tbrl train presets
tbrl train settings [SECTION]   (every --set key: default and meaning)
tbrl train plan --preset 32xh100
tbrl train launch 32xh100 --out launch/   (accelerate.yaml, commands.sh, job.sbatch)
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tbrl_lib.models import resolve_model
from tbrl_lib.overrides import parse_overrides, settings_reference
from tbrl_lib.sandbox import backend_for
from tbrl_lib.tasks.console import LENIENT_HELP
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import load_preset, preset_names
from tbrl_lib.train.grpo.preflight import PreflightError, dry_run_text, require_preflight
from tbrl_lib.train.model.model_loader import import_early
from tbrl_lib.train.plan.launch import launch_commands, server_shares_node
from tbrl_lib.train.plan.memory_plan import plan_memory
from tbrl_lib.train.plan.resume import ResumeError, find_checkpoint
from tbrl_lib.train.plan.scripts import write_launch_files
from tbrl_lib.workspace import workspace_path

app = typer.Typer(no_args_is_help=True)


def _config(preset: str, overrides: list[str]) -> TrainConfig:
    """The preset with the `--set` items applied; a bad setting is a usage error."""
    try:
        return load_preset(preset, parse_overrides(overrides))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--preset/--set") from exc


PresetOpt = typer.Option("cpu-smoke", "--preset", help="Preset name (see `tbrl train presets`).")
PresetArg = typer.Argument("", show_default=False, help="Preset name; same as --preset.")
SetOpt = typer.Option(
    [],
    "--set",
    help="Override a setting: SECTION.KEY=VALUE (YAML value), e.g. grpo.max_steps=2; "
    "`tbrl train settings` lists every key with its default and meaning.",
)
TasksOpt = typer.Option(
    None,
    "--tasks",
    help="Train on this task source (a Harbor/TB1 dir or a dir of them, a CSV, a Parquet) "
    "instead of the preset's: `--set data.tasks=DIR --set data.task_ids=[]`.",
)
LenientOpt = typer.Option(False, "--lenient", help=LENIENT_HELP + " (`--set data.lenient=true`)")
LaunchOutOpt = typer.Option(
    Path("launch"), "--out", help="Folder for accelerate.yaml and commands.sh."
)


def task_overrides(tasks: Path | None, lenient: bool, overrides: list[str]) -> list[str]:
    """`--tasks` / `--lenient` as the `--set` items they stand for (so launch files repeat
    them): a task source of one's own replaces the preset's, and its task_ids (unless set)."""
    extra = []
    if tasks is not None:
        extra.append(f"data.tasks={json.dumps(str(tasks))}")
        if not any(item.partition("=")[0].strip() == "data.task_ids" for item in overrides):
            extra.append("data.task_ids=[]")
    if lenient:
        extra.append("data.lenient=true")
    return [*overrides, *extra]


def refuse_family_with_tasks(config: TrainConfig, tasks: Path | None) -> None:
    """A preset that trains on procedural families never reads `data.tasks`: say so."""
    if tasks is not None and config.data.families:
        raise typer.BadParameter(
            f"preset {config.preset} trains on instances of the procedural families "
            f"{config.data.families} (its warm start and held-out evaluation need them), not "
            "on a task folder: use a preset without families (e.g. --preset cpu-smoke), or add "
            "--set data.families=[] --set sft.demos=0 --set heldout.instances=0",
            param_hint="--tasks",
        )


@app.command("run")
def run_cmd(
    preset: str = PresetOpt,
    overrides: list[str] = SetOpt,
    out: str = typer.Option(
        "", help="Run folder (default: the workspace's outputs/train-<preset>-<time>)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print preflight, memory plan and launch commands; run nothing."
    ),
    resume: str = typer.Option(
        "",
        "--resume",
        help="Continue a run: `latest` (newest checkpoint of --out) or a checkpoint folder; "
        "same preset and settings (grpo.max_steps may grow).",
    ),
    no_preflight: bool = typer.Option(
        False,
        "--no-preflight",
        help="Skip the preflight: for launchers that start processes the preset does not "
        "count (several CPU processes under accelerate).",
    ),
    tasks: Path | None = TasksOpt,
    lenient: bool = LenientOpt,
    show_summary: bool = typer.Option(
        True,
        "--summary/--no-summary",
        help="Print summary.json's entries at the end (the notebook's job does not: its report "
        "renders them).",
    ),
) -> None:
    """Train with GRPO; the run folder gets config, metrics, trajectories, plot, summary.
    Tasks whose own image does not build are skipped before step 1 (one line each)."""
    overrides = task_overrides(tasks, lenient, overrides)
    config = _config(preset, overrides)
    refuse_family_with_tasks(config, tasks)
    try:
        checkpoint = find_checkpoint(resume, out, config) if resume else None
    except ResumeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if dry_run:
        typer.echo(dry_run_text(config, overrides))
        return
    try:
        if not no_preflight:
            require_preflight(config)  # before any image build or download
    except PreflightError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    import_early(config)  # unsloth, when this run uses it, before transformers/TRL load
    from tbrl_lib.train.grpo.training import train  # torch and TRL: only once the engine answers

    summary = train(config, out_dir=out, resume=checkpoint or "")
    for key, value in summary.items() if show_summary else ():
        typer.echo(f"{key}: {value}")


@app.command("sft")
def sft_cmd(
    preset: str = typer.Option("cpu-demo", "--preset", help="Preset whose warm start to run."),
    overrides: list[str] = SetOpt,
    out: Path | None = typer.Option(
        None,
        show_default=False,
        help="Folder for demos.parquet and checkpoint/ (default: the workspace's outputs/sft).",
    ),
) -> None:
    """The warm start of a preset alone: teacher demonstrations recorded in sandboxes (its
    `sft`, `data` and `rollout` sections), then SFT on their assistant tokens."""
    config = _config(preset, overrides)
    if not (config.sft.demos and config.data.families):
        raise typer.BadParameter(
            f"preset {config.preset} has no warm start (sft.demos={config.sft.demos}, "
            f"data.families={config.data.families}); --set sft.demos=32 "
            "--set data.families=[write_word]",
            param_hint="--preset/--set",
        )
    try:  # a missing model: one line naming the fetch, before any sandbox
        model_path = resolve_model(config.model.name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="model.name") from exc
    backend_for().check("tbrl train sft")
    from tbrl_lib.train.warm_start.sft import (
        warm_start,  # torch and TRL: only once the engine answers
    )

    summary = warm_start(config, model_path, out or workspace_path("outputs", "sft"))
    keys = ("checkpoint", "demos", "demos_right", "trainable_parameters", "steps")
    for key in (*keys, "loss_before", "loss_after", "seconds"):
        typer.echo(f"{key}: {summary[key]}")


@app.command("presets")
def presets_cmd() -> None:
    """The shipped presets with their model, GPUs and rollouts per step (every setting a
    preset or --set may change: `tbrl train settings`)."""
    names = preset_names()
    wide = max(len(n) for n in names)
    header = ("preset", wide), ("model", 16), ("hardware", 10), ("dist", 6), ("generation", 14)
    typer.echo(" ".join(f"{name:<{width}}" for name, width in header) + " per step")
    for name in names:
        c = load_preset(name)
        launch = c.launch
        nodes = launch.num_nodes + launch.vllm_server_nodes  # training + vLLM server nodes
        per_node = launch.gpus_per_node  # + a server's GPUs beside training on its node
        per_node += launch.vllm_tensor_parallel_size if server_shares_node(c) else 0
        gpus = (
            (f"{nodes}x CPU" if nodes > 1 else "CPU") if launch.cpu else f"{nodes}x{per_node} GPU"
        )
        typer.echo(
            f"{name:<{wide}} {c.model.name:<16} {gpus:<10} {launch.distributed:<6} "
            f"{launch.generation_backend:<14} "
            f"{c.tasks_per_step} tasks x {c.grpo.num_generations} rollouts/step"
        )


@app.command("settings")
def settings_cmd(
    section: str = typer.Argument("", help="Only keys under this section, e.g. grpo."),
) -> None:
    """Every setting of a training config, as `--set` and preset files name it, with its
    default and what it does."""
    rows = [r for r in settings_reference(TrainConfig) if r[0].startswith(section)]
    if not rows:
        raise typer.BadParameter(f"no setting starts with {section!r}", param_hint="SECTION")
    for key, default, doc in rows:
        typer.echo(f"{key}  (default {default})")
        if doc:
            typer.echo(f"    {doc}")


@app.command("preflight")
def preflight_cmd(
    preset_name: str = PresetArg, preset: str = PresetOpt, overrides: list[str] = SetOpt
) -> None:
    """Check a preset against this machine and launch (exit 2 naming what is missing)."""
    config = _config(preset_name or preset, overrides)
    try:
        require_preflight(config)
    except PreflightError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    typer.echo(f"preset {config.preset}: preflight ok")


@app.command("plan")
def plan_cmd(
    preset_name: str = PresetArg, preset: str = PresetOpt, overrides: list[str] = SetOpt
) -> None:
    """Per-GPU memory estimate of a preset (weights, grads, optimizer, activations, logits, vLLM)."""
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
    run_dir: str = typer.Option(
        "",
        "--run-dir",
        help="The Slurm job's run folder, where {job} becomes the job's id "
        "(default outputs/04_train-<preset>-{job}).",
    ),
) -> None:
    """Write accelerate.yaml, commands.sh (per node) and job.sbatch (Slurm: notebook 04 under
    papermill, which runs the preset on the allocation's nodes) for a preset."""
    config = _config(preset_name or preset, overrides)
    names = [n.strip() for n in nodes.split(",") if n.strip()]
    try:
        files = write_launch_files(config, out, overrides, names, run_dir or None)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--nodes") from exc
    typer.echo("wrote " + ", ".join(str(p) for p in files.values()))
    commands = launch_commands(
        config, str(files["accelerate"]), f"outputs/train-{config.preset}", overrides
    )
    for role, cmd in commands.items():
        typer.echo(f"{role}: {cmd}")
