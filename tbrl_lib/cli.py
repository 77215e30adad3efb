"""The `tbrl` command: thin wrappers over the functions the notebooks call.

Each package owns its sub-command group in its own `cli.py`; this module only mounts
them. Heavy imports (torch, pandas, docker builds) happen inside the commands, so
`tbrl --help` stays fast.
"""

from __future__ import annotations

import typer

from tbrl_lib.agent.cli import app as agent_app
from tbrl_lib.evaluate.cli import app as eval_app
from tbrl_lib.rewards.cli import app as judge_app
from tbrl_lib.sandbox.cli import bench_app, docker_app, images_app
from tbrl_lib.tasks.cli import app as tasks_app
from tbrl_lib.train.cli import app as train_app

app = typer.Typer(
    help="tbrl: train and evaluate long-horizon terminal agents with RL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(images_app, name="images", help="Base images (offline Debian substitutes).")
app.add_typer(docker_app, name="docker", help="Docker engine: ensure it runs, reap leftovers.")
app.add_typer(bench_app, name="bench", help="Benchmarks that print a table against a baseline.")
app.add_typer(tasks_app, name="tasks", help="Convert, validate, generate and describe tasks.")
app.add_typer(agent_app, name="agent", help="The agent: prompt, parse a reply, run an episode.")
app.add_typer(judge_app, name="judge", help="LLM and rule-based judges: evaluate them.")
app.add_typer(eval_app, name="eval", help="Benchmark a policy on tasks (pass@k, CIs).")
app.add_typer(train_app, name="train", help="GRPO training: run a preset, memory plan, launch files.")


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


DEMO_NOTEBOOK = "04_train"
"""The biggest end-to-end path: GRPO with the cpu-smoke preset, real sandboxes, real TRL."""


@app.command()
def demo(
    notebook: str = typer.Option(DEMO_NOTEBOOK, help="Notebook to run (name without .ipynb)."),
    param: list[str] = typer.Option([], "--param", "-p", help="Notebook parameter KEY=VALUE."),
    out: str = typer.Option("", help="Run folder (default: outputs/<notebook>-<time>)."),
) -> None:
    """Run the main job headless on the embedded defaults; results land under outputs/."""
    import yaml

    from tbrl_lib.notebook_tools.execute import execute_notebook, read_summary

    params = {}
    for item in param:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--param")
        params[key] = yaml.safe_load(value)
    run = execute_notebook(notebook, params, out or None)
    typer.echo(f"run folder: {run}")
    for key, value in read_summary(run).items():
        typer.echo(f"  {key}: {value}")


if __name__ == "__main__":
    app()
