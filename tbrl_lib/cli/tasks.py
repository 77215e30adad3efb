"""`tbrl tasks convert|stats|generate|validate|check`: thin over `tbrl_lib.tasks` (loader,
stats, console), `tbrl_lib.synth.generate` (procedural families) and
`tbrl_lib.evaluate.validate` (build, no-op, oracle, repeats). The parquet format carries the
agent's first prompt (`initial_messages`).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.console import console
from tbrl_lib.evaluate.validate import (
    ValidationConfig,
    check_ok,
    check_table,
    validate_tasks,
    validation_table,
)
from tbrl_lib.sandbox import backend_for
from tbrl_lib.synth.dedup import balance_table
from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.generate import generate as draw_tasks
from tbrl_lib.tasks.console import (
    LENIENT_HELP,
    print_convert_reports,
    print_load_report,
    skipped_table,
)
from tbrl_lib.tasks.formats import FORMATS
from tbrl_lib.tasks.loader import load_tasks, write_tasks
from tbrl_lib.tasks.stats import stats_tables, task_stats

app = typer.Typer(no_args_is_help=True)


FormatName = Enum("FormatName", {name: name for name in FORMATS}, type=str)
"""`--to` / `--format` choices: every format of the registry (`tbrl_lib.tasks.formats`)."""


@app.command()
def convert(
    src: Path = typer.Argument(
        ..., help="Tasks to read: a .csv, a .parquet, a task dir or a dir of task dirs."
    ),
    to: FormatName = typer.Option(..., "--to", help="Format to write."),
    out: Path = typer.Argument(
        ..., help="Output: a directory (tb1, harbor) or a file (csv, parquet)."
    ),
    lenient: bool = typer.Option(False, help=LENIENT_HELP),
    workers: int = typer.Option(4, min=1, help="Threads reading/writing task directories."),
) -> None:
    """Convert tasks between formats (the source format is detected). Nothing is written
    when no task loads."""
    mode = "lenient" if lenient else "strict"
    screen = console()
    tasks, load = load_tasks(src, mode, workers=workers)
    if not tasks:
        skipped = load.skipped
        if skipped:
            screen.print(skipped_table(f"skipped while reading ({len(skipped)})", skipped))
            raise ValueError(
                f"{src}: none of its {len(skipped)} task(s) could be read (first: "
                f"{skipped[0]}); nothing written to {out}. Fix the tasks listed above"
            )
        raise ValueError(
            f"{src} holds no tasks; nothing written to {out}. Give a task source "
            "with at least one task (a .csv, .parquet, task dir or dir of task dirs)"
        )
    write = write_tasks(
        tasks,
        to.value,
        out,
        mode=mode,
        workers=workers,
        prompt_fn=initial_messages,
    )
    print_convert_reports(screen, load, write)
    raise typer.Exit(1 if write.written == 0 else 0)


@app.command()
def stats(
    path: Path = typer.Argument(..., help="Tasks to describe (any supported format)."),
    lenient: bool = typer.Option(False, help=LENIENT_HELP),
) -> None:
    """Counts by difficulty and category, base images, and sizes."""
    screen = console()
    tasks, report = load_tasks(path, "lenient" if lenient else "strict")
    for table in stats_tables(task_stats(tasks)):
        screen.print(table)
    print_load_report(screen, report)


@app.command()
def generate(
    family: str = typer.Option("all", help=f"Family, comma list or 'all': {', '.join(FAMILIES)}."),
    n: int = typer.Option(8, min=1, help="How many tasks."),
    seed: int = typer.Option(0, help="First instance seed (instances use seed, seed+1, ...)."),
    difficulty: str = typer.Option("mixed", help="easy|medium|hard|extremely_hard|mixed."),
    out: Path = typer.Option(..., help="Output directory (or file for csv/parquet)."),
    fmt: FormatName = typer.Option("harbor", "--format", help="Format to write."),
    balance: bool = typer.Option(True, help="Print the category/difficulty balance table."),
) -> None:
    """Generate tasks from the procedural families and write them (Harbor dirs by default)."""
    try:
        tasks = draw_tasks(family, n, seed, difficulty, progress=True)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from err
    report = write_tasks(tasks, fmt.value, out, prompt_fn=initial_messages)
    typer.echo(f"wrote {len(tasks)} tasks as {fmt.value} to {out}")
    if report.dropped:
        typer.echo(f"fields the {fmt.value} format cannot hold: {report.dropped}")
    if balance:
        typer.echo(balance_table(tasks).to_string())


@app.command()
def validate(
    path: Path = typer.Argument(
        ..., help="Tasks to validate (any supported format), e.g. data/tasks."
    ),
    concurrency: int = typer.Option(4, min=1, help="Tasks validated at once."),
    only: list[str] = typer.Option([], "--only", help="Validate only these task ids (repeatable)."),
    repeats: int = typer.Option(
        3, min=1, help="Test runs on the solved container; all must agree."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Also write every result (reasons, timings) as JSON."
    ),
    lenient: bool = typer.Option(False, help=LENIENT_HELP),
) -> None:
    """Build each task, check the untouched environment scores <= 0.2 and the reference
    solution 1.0 (stable over repeats); print a table; exit 1 if any task fails."""
    backend_for().check("tbrl tasks validate")
    tasks, report = load_tasks(path, "lenient" if lenient else "strict")
    print_load_report(console(), report)
    if only:
        unknown = sorted(set(only) - {t.id for t in tasks})
        if unknown:
            raise typer.BadParameter(
                f"names tasks not in {path}: {', '.join(unknown)}", param_hint="--only"
            )
        tasks = [t for t in tasks if t.id in set(only)]
    results = validate_tasks(
        tasks, concurrency=concurrency, config=ValidationConfig(repeats=repeats)
    )
    console().print(validation_table(results))
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps([r.to_dict() for r in results], indent=2))
    raise typer.Exit(0 if all(r.ok for r in results) else 1)


@app.command()
def check(
    path: Path = typer.Argument(
        ..., help="Tasks someone else wrote (any supported format), e.g. a Harbor dataset."
    ),
    concurrency: int = typer.Option(2, min=1, help="Tasks checked at once."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write every result as JSON."),
) -> None:
    """Before training on a dataset: load it leniently, build each image, run the no-op
    policy and (where a solution exists) the oracle through the real rollout; one table of
    loads / builds / no-op / oracle / reason. Exit 1 when anything failed."""
    backend_for().check("tbrl tasks check")
    loaded = load_tasks(path, "lenient")
    print_load_report(console(), loaded.report, skipped=False)  # skipped: rows of the table
    results = (
        validate_tasks(loaded.tasks, concurrency=concurrency, config=ValidationConfig(repeats=1))
        if loaded.tasks
        else []
    )
    console().print(check_table(loaded.report.skipped, results))
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(
            json.dumps(
                {
                    "skipped": [e.as_dict() for e in loaded.report.skipped],
                    "results": [r.to_dict() for r in results],
                },
                indent=2,
            )
        )
    raise typer.Exit(0 if check_ok(loaded.report.skipped, results) else 1)
