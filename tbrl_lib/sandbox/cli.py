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
    built = base_images.bootstrap(
        engine.client(timeout=900), pull=pull, force=force, log=typer.echo
    )
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
    typer.echo(
        f"docker {info.version} at {info.endpoint}" + (" (started)" if info.started_by_us else "")
    )


@docker_app.command("reap")
def docker_reap(
    host: list[str] = typer.Option(
        [],
        help="Docker host(s) to reap (unix://, tcp://, ssh://); "
        "default: DOCKER_HOST or the local engine.",
    ),
    foreign: bool = typer.Option(
        False,
        help="Also remove tbrl objects owned by processes on "
        "OTHER machines (only when you know those runs are gone).",
    ),
) -> None:
    """Remove tbrl-labelled containers/networks/volumes whose owner process is gone.

    Only objects carrying tbrl's `tbrl.owner` label are considered; live owners' objects
    are kept. Never a host-wide prune."""
    from tbrl_lib.sandbox import engine, reaper

    if not host:
        engine.require_engine("tbrl docker reap")
    for base_url in host or [None]:
        client = engine.client(base_url)
        report = reaper.reap(client, foreign=foreign)
        where = base_url or "default engine"
        typer.echo(
            f"{where}: removed {len(report.containers)} containers, "
            f"{len(report.networks)} networks, {len(report.volumes)} volumes; kept "
            f"{report.kept_alive_owner} of live owners, {report.kept_foreign} of other machines"
        )
        for err in report.errors:
            typer.echo(f"  error: {err}", err=True)
        client.close()


bench_app = typer.Typer(no_args_is_help=True)


@bench_app.command("sandbox")
def bench_sandbox(
    commands: int = typer.Option(200, help="Trivial commands timed per method."),
    starts: int = typer.Option(10, help="Containers started per start-up method."),
    episodes: int = typer.Option(32, help="Scripted 20-command episodes per concurrency level."),
    concurrency: str = typer.Option("1,8,32", help="Comma-separated concurrency levels."),
    out: str = typer.Option("", help="Also write the results as JSON to this file."),
) -> None:
    """Persistent shell vs exec-per-command, cold start vs warm pool, rollouts/hour."""
    from tbrl_lib.sandbox.bench import run_benchmark

    run_benchmark(
        commands=commands,
        starts=starts,
        episodes=episodes,
        levels=[int(x) for x in concurrency.split(",") if x.strip()],
        out=out or None,
        echo=typer.echo,
    )
