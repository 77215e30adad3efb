"""Terminal output for the `tbrl tasks` commands: load/write reports and stats as rich tables.

Kept apart from `cli.py` so the CLI stays a thin layer and notebooks can print the same
tables. Nothing here decides anything; it only shows reports the loader produced. Text that
comes from tasks or errors is escaped (`rich.markup.escape`): a message quoting a pattern
such as `[a-z0-9]` must print as written, not be read as markup and vanish.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tbrl_lib.tasks.errors import LoadReport, TaskFormatError
from tbrl_lib.tasks.loader import WriteReport

LENIENT_HELP = (
    "Skip tasks that do not load and read loosely written weights (numbers as text, keys "
    "without test_), each change reported; without it the first bad task stops the command."
)
"""The help of every command's `--lenient` (one loading mode everywhere)."""


def skipped_table(title: str, skipped: list[TaskFormatError]) -> Table:
    table = Table(title=title, show_lines=True)
    for column in ("location", "field", "problem", "fix"):
        table.add_column(column, overflow="fold")
    for err in skipped:
        table.add_row(*(escape(text) for text in (err.location, err.field, err.problem, err.fix)))
    return table


def print_load_report(console: Console, load: LoadReport, skipped: bool = True) -> None:
    """What a lenient load skipped (unless `skipped` is False: the caller shows those) and
    what it changed, one table each; nothing when it did neither."""
    if skipped and load.skipped:
        console.print(skipped_table(f"skipped while reading ({len(load.skipped)})", load.skipped))
    if load.warnings:
        console.print(
            skipped_table(f"changed while reading leniently ({len(load.warnings)})", load.warnings)
        )


def print_convert_reports(console: Console, load: LoadReport, write: WriteReport) -> None:
    console.print(
        f"read {load.loaded} task(s) from {escape(load.source)}; wrote {write.written} "
        f"to {escape(write.target)}"
    )
    print_load_report(console, load)
    if write.skipped:
        console.print(skipped_table(f"skipped while writing ({len(write.skipped)})", write.skipped))
    if write.dropped:
        fields = sorted({f for lost in write.dropped.values() for f in lost})
        console.print(
            f"[yellow]note[/] {len(write.dropped)} task(s) lost fields this format cannot hold: "
            f"{escape(', '.join(fields))}",
            highlight=False,
        )
