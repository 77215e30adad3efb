"""`tbrl docker ensure|reap`: a Docker engine answering, and tbrl's leftovers removed (thin
over `tbrl_lib.docker.engine` and `tbrl_lib.docker.reaper`)."""

from __future__ import annotations

import typer

from tbrl_lib.docker import engine, reaper
from tbrl_lib.sandbox import BACKENDS, SandboxConfig, backend_for

app = typer.Typer(no_args_is_help=True)


@app.command("ensure")
def docker_ensure() -> None:
    """Make sure a Docker engine answers (starts dockerd when root and allowed)."""
    info = engine.ensure_engine()
    typer.echo(
        f"docker {info.version} at {info.endpoint}" + (" (started)" if info.started_by_us else "")
    )


@app.command("reap")
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
    caches: bool = typer.Option(
        False,
        help="Also remove the sandbox backend's caches no sandbox uses (the verifier's "
        "pristine copies of images, `tbrl-pristine-*` volumes, ~95 MB each); rebuilt on demand.",
    ),
    backend: str = typer.Option(
        "",
        help="A sandbox backend (docker, ray, ...) reaping every place it runs sandboxes (ray: "
        "each live node of the cluster RAY_ADDRESS names); default: the Docker engines above.",
    ),
    run_id: str = typer.Option(
        "", "--run-id", help="Only this run's containers (their `tbrl.run` label)."
    ),
) -> None:
    """Remove tbrl-labelled containers/networks/volumes whose owner process is gone.

    Only objects carrying tbrl's `tbrl.owner` label are considered; live owners' objects
    are kept (with --caches, also unused `tbrl-pristine-*` volumes). Never a host-wide prune."""
    if backend and backend not in BACKENDS:
        raise typer.BadParameter(
            f"{backend!r}: use one of {', '.join(BACKENDS)}", param_hint="--backend"
        )
    if backend:
        sandboxes = backend_for(SandboxConfig(backend=backend))
        for line in sandboxes.reap(run_id or None) + (sandboxes.prune_caches() if caches else []):
            typer.echo(line)
        return
    if not host:
        engine.require_engine("tbrl docker reap")
    for base_url in host or [None]:
        client = engine.client(base_url)
        report = reaper.reap(client, foreign=foreign, run_id=run_id or None)
        where = base_url or "default engine"
        typer.echo(
            f"{where}: removed {len(report.containers)} containers, "
            f"{len(report.networks)} networks, {len(report.volumes)} volumes; kept "
            f"{report.kept_alive_owner} of live owners, {report.kept_foreign} of other machines"
        )
        for err in report.errors:
            typer.echo(f"  error: {err}", err=True)
        client.close()
    if caches:  # the default backend's (this machine's engine)
        for line in backend_for(SandboxConfig()).prune_caches():
            typer.echo(line)
