"""`tbrl tasks generate` (procedural families) and `tbrl tasks synth` helpers.

The command functions live here; `tbrl_lib/tasks_cli.py` mounts `generate` on the
`tbrl tasks` group. They are thin wrappers over `tbrl_lib.synth.generate` and
`tbrl_lib.tasks.write_tasks`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from tbrl_lib.synth.families import FAMILIES


def generate(
    family: str = typer.Option("all", help=f"Family, comma list or 'all': {', '.join(FAMILIES)}."),
    n: int = typer.Option(8, min=1, help="How many tasks."),
    seed: int = typer.Option(0, help="First instance seed (instances use seed, seed+1, ...)."),
    difficulty: str = typer.Option("mixed", help="easy|medium|hard|extremely_hard|mixed."),
    out: Path = typer.Option(..., help="Output directory (or file for csv/parquet)."),
    fmt: str = typer.Option("harbor", "--format", help="harbor|tb1|csv|parquet."),
    balance: bool = typer.Option(True, help="Print the category/difficulty balance table."),
) -> None:
    """Generate tasks from the procedural families and write them (Harbor dirs by default)."""
    from tbrl_lib.synth.generate import generate as draw
    from tbrl_lib.tasks import write_tasks

    try:
        tasks = draw(family, n, seed, difficulty, progress=True)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from err
    from tbrl_lib.agent.prompts import initial_messages

    report = write_tasks(tasks, fmt, out, prompt_fn=initial_messages if fmt == "parquet" else None)
    typer.echo(f"wrote {len(tasks)} tasks as {fmt} to {out}")
    dropped = getattr(report, "dropped", None)
    if dropped:
        typer.echo(f"fields the {fmt} format cannot hold: {dropped}")
    if balance:
        from tbrl_lib.synth.dedup import balance_table

        typer.echo(balance_table(tasks).to_string())
