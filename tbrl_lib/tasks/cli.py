"""`tbrl tasks` commands: thin wrappers over `tbrl_lib.tasks` (loader, stats, console).

Other packages append their commands at the end (`generate` from tbrl_lib.synth,
`validate` from tbrl_lib.tasks.validate).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)


class TaskFormat(str, Enum):
    tb1 = "tb1"
    harbor = "harbor"
    csv = "csv"
    parquet = "parquet"


@app.command()
def convert(
    src: Path = typer.Argument(..., help="Tasks to read: a .csv, a .parquet, a task dir or a dir of task dirs."),
    to: TaskFormat = typer.Option(..., "--to", help="Format to write."),
    out: Path = typer.Argument(..., help="Output: a directory (tb1, harbor) or a file (csv, parquet)."),
    lenient: bool = typer.Option(False, help="Skip bad tasks and report them instead of stopping at the first."),
    workers: int = typer.Option(4, min=1, help="Threads reading/writing task directories."),
) -> None:
    """Convert tasks between formats (the source format is detected)."""
    from rich.console import Console

    from tbrl_lib.tasks.console import print_convert_reports, print_error
    from tbrl_lib.tasks.errors import TaskFormatError
    from tbrl_lib.tasks.loader import convert as convert_tasks

    console = Console()
    try:
        load, write = convert_tasks(src, to.value, out, mode="lenient" if lenient else "strict", workers=workers)
    except TaskFormatError as err:
        print_error(console, err)
        raise typer.Exit(1) from None
    print_convert_reports(console, load, write)
    raise typer.Exit(1 if write.written == 0 and (load.skipped or write.skipped) else 0)


@app.command()
def stats(
    path: Path = typer.Argument(..., help="Tasks to describe (any supported format)."),
    lenient: bool = typer.Option(False, help="Describe the tasks that load; list the rest."),
) -> None:
    """Counts by difficulty and category, base images, and sizes."""
    from rich.console import Console

    from tbrl_lib.tasks.console import print_error, skipped_table
    from tbrl_lib.tasks.errors import TaskFormatError
    from tbrl_lib.tasks.loader import load_tasks
    from tbrl_lib.tasks.stats import stats_tables, task_stats

    console = Console()
    try:
        tasks, report = load_tasks(path, "lenient" if lenient else "strict")
    except TaskFormatError as err:
        print_error(console, err)
        raise typer.Exit(1) from None
    for table in stats_tables(task_stats(tasks)):
        console.print(table)
    if report.skipped:
        console.print(skipped_table(f"skipped ({len(report.skipped)})", report.skipped))


# `tbrl tasks generate`: procedural task families, owned by tbrl_lib.synth (helper "synth").
from tbrl_lib.synth.cli import generate as _synth_generate  # noqa: E402

app.command("generate")(_synth_generate)
