"""`tbrl images bootstrap|status`: the offline base images (thin over
`tbrl_lib.docker.base_images`)."""

from __future__ import annotations

import typer

from tbrl_lib.docker import base_images, engine

app = typer.Typer(no_args_is_help=True)


@app.command("bootstrap")
def images_bootstrap(
    pull: bool = typer.Option(False, help="Pull the real public images (needs a registry)."),
    force: bool = typer.Option(False, help="Rebuild even when the recipe is unchanged."),
) -> None:
    """Build the offline base images and tag the public Terminal-Bench names onto them."""
    engine.ensure_engine()
    built = base_images.bootstrap(
        engine.client(timeout=900), pull=pull, force=force, log=typer.echo
    )
    typer.echo("up to date" if not built else f"built: {', '.join(built)}")


@app.command("status")
def images_status() -> None:
    """Which base images exist, and which are local substitutes."""
    engine.ensure_engine(start=False)
    for row in base_images.status(engine.client()):
        typer.echo(f"{'ok ' if row.present else 'MISSING'}  {row.name}  {row.detail}")
