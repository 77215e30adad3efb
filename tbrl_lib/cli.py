"""The `tbrl` command: thin wrappers over the functions the notebooks call.

Each package owns its sub-command group in its own `cli.py`; this module only mounts
them. Heavy imports (torch, pandas, docker builds) happen inside the commands, so
`tbrl --help` stays fast.
"""

from __future__ import annotations

import typer

from tbrl_lib.evaluate.cli import app as eval_app
from tbrl_lib.rewards.cli import app as judge_app
from tbrl_lib.sandbox.cli import docker_app, images_app
from tbrl_lib.tasks.cli import app as tasks_app

app = typer.Typer(
    help="tbrl: train and evaluate long-horizon terminal agents with RL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(images_app, name="images", help="Base images (offline Debian substitutes).")
app.add_typer(docker_app, name="docker", help="Docker engine: ensure it runs, reap leftovers.")
app.add_typer(tasks_app, name="tasks", help="Convert, validate, generate and describe tasks.")
app.add_typer(judge_app, name="judge", help="LLM and rule-based judges: evaluate them.")
app.add_typer(eval_app, name="eval", help="Benchmark a policy on tasks (pass@k, CIs).")


@app.command()
def doctor() -> None:
    """One table: what is installed, what answers, and what each missing piece disables."""
    from tbrl_lib.doctor import print_report

    raise typer.Exit(print_report())


@app.command()
def setup(
    images: bool = typer.Option(True, help="Also make sure the base images exist."),
) -> None:
    """Make the workspace ready: Docker engine answering, base images present."""
    from tbrl_lib.sandbox import base_images, engine

    info = engine.ensure_engine()
    how = "started dockerd" if info.started_by_us else "already running"
    typer.echo(f"docker engine {info.version} at {info.endpoint} ({how})")
    if images:
        built = base_images.bootstrap(engine.client(timeout=900), log=typer.echo)
        typer.echo(f"base images: {'built ' + ', '.join(built) if built else 'present'}")


if __name__ == "__main__":
    app()
