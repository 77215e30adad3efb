"""`tbrl upstream fetch|status`: where the upstream reference data are read from, and fetching
them into the git-ignored data/upstream/ (thin over `tbrl_lib.upstream`)."""

from __future__ import annotations

import typer

from tbrl_lib import upstream

app = typer.Typer(no_args_is_help=True)


@app.command("fetch")
def upstream_fetch(
    src: str = typer.Argument(
        ...,
        help="A folder holding latest_verified.csv and judge_cases/, "
        "or a git URL of a repository that has them at its top level.",
    ),
    force: bool = typer.Option(False, help="Replace data/upstream/ when it already holds data."),
) -> None:
    """Copy (or git clone) the upstream reference data into the git-ignored data/upstream/."""
    dest = upstream.fetch(src, force=force)
    found = [name for name in (upstream.CSV_NAME, upstream.JUDGE_CASES) if (dest / name).exists()]
    typer.echo(f"upstream data in {dest}: {', '.join(found)}")
    if upstream.upstream_dir() != dest:
        typer.echo(f"note: {upstream.ENV_VAR} is set and takes precedence over {dest}")


@app.command("status")
def upstream_status() -> None:
    """Where the upstream reference data are read from (or how to add them)."""
    root = upstream.upstream_dir()
    if root is None:
        typer.echo(upstream.hint())
        raise typer.Exit(1)
    for name in (upstream.CSV_NAME, upstream.JUDGE_CASES):
        typer.echo(f"{name}: {root / name if (root / name).exists() else 'missing'}")
