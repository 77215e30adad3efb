"""`tbrl docker ensure|reap`: a Docker engine answering, and tbrl's leftovers removed (thin
over `tbrl_lib.sandbox.backends.docker.engine` and `tbrl_lib.sandbox.backends.docker.reaper`)."""

from __future__ import annotations

import typer

from tbrl_lib.sandbox import SandboxConfig, backend_for
from tbrl_lib.sandbox.backends.docker import engine, pristine_volume, reaper

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
        help="Also remove the verifier's pristine copies of images (`tbrl-pristine-*` volumes, "
        "~95 MB each) that no container uses; they are rebuilt on demand.",
    ),
    backend: str = typer.Option(
        "docker",
        help="docker: the engines above; ray: every live node of the Ray cluster RAY_ADDRESS "
        "names (sandbox.backend=ray), each reaping its own engine.",
    ),
    run_id: str = typer.Option(
        "", "--run-id", help="Only this run's containers (their `tbrl.run` label)."
    ),
) -> None:
    """Remove tbrl-labelled containers/networks/volumes whose owner process is gone.

    Only objects carrying tbrl's `tbrl.owner` label are considered; live owners' objects
    are kept (with --caches, also unused `tbrl-pristine-*` volumes). Never a host-wide prune."""
    if backend not in ("docker", "ray"):
        raise typer.BadParameter(f"{backend!r}: use docker or ray", param_hint="--backend")
    if backend == "ray":
        for line in backend_for(SandboxConfig(backend="ray")).reap(run_id or None):
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
        if caches:
            removed, in_use = pristine_volume.prune(client)
            typer.echo(f"{where}: removed {len(removed)} pristine volumes; kept {in_use} in use")
        client.close()
