"""`tbrl bench sandbox`: the sandbox benchmark, a table against its baseline measured in the
same run (thin over `tbrl_lib.sandbox.bench`)."""

from __future__ import annotations

import typer

from tbrl_lib.sandbox.bench import run_benchmark

app = typer.Typer(no_args_is_help=True)


@app.command("sandbox")
def bench_sandbox(
    commands: int = typer.Option(200, help="Trivial commands timed per method."),
    starts: int = typer.Option(10, help="Containers started per start-up method."),
    episodes: int = typer.Option(32, help="Scripted 20-command episodes per concurrency level."),
    concurrency: str = typer.Option("1,8,32", help="Comma-separated concurrency levels."),
    out: str = typer.Option("", help="Also write the results as JSON to this file."),
) -> None:
    """Persistent shell vs exec-per-command, cold start vs warm pool, rollouts/hour."""
    run_benchmark(
        commands=commands,
        starts=starts,
        episodes=episodes,
        levels=[int(x) for x in concurrency.split(",") if x.strip()],
        out=out or None,
        echo=typer.echo,
    )
