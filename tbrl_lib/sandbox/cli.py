"""`tbrl images ...` and `tbrl docker ...` commands."""

from __future__ import annotations

import typer

images_app = typer.Typer(no_args_is_help=True)
docker_app = typer.Typer(no_args_is_help=True)


@images_app.command("bootstrap")
def images_bootstrap(
    pull: bool = typer.Option(False, help="Pull the real public images (needs a registry)."),
    force: bool = typer.Option(False, help="Rebuild even when the recipe is unchanged."),
) -> None:
    """Build the offline base images and tag the public Terminal-Bench names onto them."""
    from tbrl_lib.sandbox import base_images, engine

    engine.ensure_engine()
    built = base_images.bootstrap(engine.client(timeout=900), pull=pull, force=force,
                                  log=typer.echo)
    typer.echo("up to date" if not built else f"built: {', '.join(built)}")


@images_app.command("status")
def images_status() -> None:
    """Which base images exist, and which are local substitutes."""
    from tbrl_lib.sandbox import base_images, engine

    engine.ensure_engine(start=False)
    for row in base_images.status(engine.client()):
        typer.echo(f"{'ok ' if row.present else 'MISSING'}  {row.name}  {row.detail}")


@docker_app.command("ensure")
def docker_ensure() -> None:
    """Make sure a Docker engine answers (starts dockerd when root and allowed)."""
    from tbrl_lib.sandbox import engine

    info = engine.ensure_engine()
    typer.echo(f"docker {info.version} at {info.endpoint}"
               + (" (started)" if info.started_by_us else ""))
