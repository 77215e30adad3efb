"""The workspace commands `tbrl doctor`, `tbrl setup` and `tbrl demo` (mounted at the top
level by `app.py`): what is installed, the engine and base images made ready, a notebook run
headless (thin over `tbrl_lib.doctor`, `tbrl_lib.sandbox`, `tbrl_lib.notebook_tools.execute`)."""

from __future__ import annotations

import typer

from tbrl_lib.docker import base_images, engine
from tbrl_lib.doctor import print_report
from tbrl_lib.notebook_tools.execute import execute_notebook, read_summary
from tbrl_lib.overrides import yaml_value


def doctor() -> None:
    """One table: what is installed, what answers, and what each missing piece disables."""
    raise typer.Exit(print_report())


def setup(
    images: bool = typer.Option(True, help="Also make sure the base images exist."),
) -> None:
    """Make the workspace ready: Docker engine answering, base images present."""
    info = engine.ensure_engine()
    how = "started dockerd" if info.started_by_us else "already running"
    typer.echo(f"docker engine {info.version} at {info.endpoint} ({how})")
    if images:
        built = base_images.bootstrap(engine.client(timeout=900), log=typer.echo)
        typer.echo(f"base images: {'built ' + ', '.join(built) if built else 'present'}")


DEMO_NOTEBOOK = "04_train"
"""The main job: notebook 04 on its default preset, cpu-demo (SFT warm start, GRPO, held-out
evaluations; real sandboxes, real TRL trainers)."""


def demo(
    notebook: str = typer.Option(DEMO_NOTEBOOK, help="Notebook to run (name without .ipynb)."),
    param: list[str] = typer.Option([], "--param", "-p", help="Notebook parameter KEY=VALUE."),
    out: str = typer.Option("", help="Run folder (default: outputs/<notebook>-<time>)."),
) -> None:
    """Run the main job headless on the embedded defaults; results land under outputs/."""
    params = {}
    for item in param:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--param")
        params[key] = yaml_value(value)
    run = execute_notebook(notebook, params, out or None)
    typer.echo(f"run folder: {run}")
    typer.echo(f"report: {run / f'{notebook}.html'}")
    for key, value in read_summary(run).items():
        typer.echo(f"  {key}: {_short(value)}")


def _short(value: object) -> str:
    """A summary value on one short line: scalars as they are, a short flat dict inline,
    anything bigger as its size (the whole is in summary.json and the report)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if (
        isinstance(value, dict)
        and len(value) <= 4
        and all(isinstance(v, int | float | str | None) for v in value.values())
    ):
        return ", ".join(f"{k} {_short(v)}" for k, v in value.items())
    if isinstance(value, dict | list):
        return f"{len(value)} entries (summary.json)"
    return str(value)
