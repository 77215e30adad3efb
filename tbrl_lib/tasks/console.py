"""Terminal output for the `tbrl tasks` commands: load/write reports and stats as rich tables.

Kept apart from `cli.py` so the CLI stays a thin layer and notebooks can print the same
tables. Nothing here decides anything; it only shows reports the loader produced.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tbrl_lib.tasks.errors import LoadReport, TaskFormatError
from tbrl_lib.tasks.loader import WriteReport


def skipped_table(title: str, skipped: list[TaskFormatError]) -> Table:
    table = Table(title=title, show_lines=True)
    for column in ("location", "field", "problem", "fix"):
        table.add_column(column, overflow="fold")
    for err in skipped:
        table.add_row(err.location, err.field, err.problem, err.fix)
    return table


def print_convert_reports(console: Console, load: LoadReport, write: WriteReport) -> None:
    console.print(f"read {load.loaded} task(s) from {load.source}; wrote {write.written} to {write.target}")
    if load.skipped:
        console.print(skipped_table(f"skipped while reading ({len(load.skipped)})", load.skipped))
    if write.skipped:
        console.print(skipped_table(f"skipped while writing ({len(write.skipped)})", write.skipped))
    if write.dropped:
        fields = sorted({f for lost in write.dropped.values() for f in lost})
        console.print(f"[yellow]note[/] {len(write.dropped)} task(s) lost fields this format cannot hold: "
                      f"{', '.join(fields)}", highlight=False)
