"""Describe a set of tasks: counts by difficulty and category, base images, and sizes.

`task_stats(tasks)` computes plain numbers (for notebooks and tests); `stats_tables(stats)`
turns them into rich tables (for `tbrl tasks stats`). Base images come from the Dockerfile's
FROM lines (`tasks.dockerfile.base_images`). Left out: image sizes (that needs a build).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.table import Table

from tbrl_lib.tasks.dockerfile import base_images
from tbrl_lib.tasks.model import Difficulty, Task


@dataclass
class TaskStats:
    count: int = 0
    by_difficulty: Counter[str] = field(default_factory=Counter)
    by_category: Counter[str] = field(default_factory=Counter)
    base_images: Counter[str] = field(default_factory=Counter)
    sizes: dict[str, list[float]] = field(default_factory=dict)
    """Per-task measures: instruction_chars, dockerfile_lines, test_functions, env_files, env_bytes."""
    with_solution: int = 0
    with_weights: int = 0


def task_stats(tasks: Sequence[Task]) -> TaskStats:
    stats = TaskStats(count=len(tasks))
    sizes: dict[str, list[float]] = {
        k: []
        for k in (
            "instruction_chars",
            "dockerfile_lines",
            "test_functions",
            "env_files",
            "env_bytes",
        )
    }
    for task in tasks:
        stats.by_difficulty[task.difficulty.value] += 1
        stats.by_category[task.category] += 1
        stats.base_images.update(dict.fromkeys(base_images(task), 1))  # tasks per image
        stats.with_solution += task.solution is not None
        stats.with_weights += bool(task.tests.weights)
        sizes["instruction_chars"].append(len(task.instruction))
        sizes["dockerfile_lines"].append(len((task.environment.dockerfile or "").splitlines()))
        sizes["test_functions"].append(len(task.tests.test_names()))
        context = task.environment.context_files()  # text and binary files alike
        sizes["env_files"].append(len(context))
        sizes["env_bytes"].append(sum(len(data) for data in context.values()))
    stats.sizes = sizes
    return stats


def stats_tables(stats: TaskStats, top: int = 15) -> list[Table]:
    """Rich tables: overview, difficulty, category, base images (top `top`), sizes."""
    overview = Table(title=f"{stats.count} tasks")
    overview.add_column("measure")
    overview.add_column("count", justify="right")
    overview.add_row("with reference solution", str(stats.with_solution))
    overview.add_row("with test weights", str(stats.with_weights))
    order = [d.value for d in Difficulty]
    difficulty = _counter_table(
        "difficulty",
        Counter({d: stats.by_difficulty[d] for d in order if stats.by_difficulty[d]}),
        stats.count,
        sort=False,
    )
    tables = [
        overview,
        difficulty,
        _counter_table("category", stats.by_category, stats.count),
        _counter_table("base image", stats.base_images, stats.count, top=top),
    ]
    sizes = Table(title="sizes per task")
    for column in ("measure", "min", "median", "mean", "max", "total"):
        sizes.add_column(column, justify="left" if column == "measure" else "right")
    for name, values in stats.sizes.items():
        if values:
            sizes.add_row(
                name,
                _num(min(values)),
                _num(statistics.median(values)),
                _num(statistics.fmean(values)),
                _num(max(values)),
                _num(sum(values)),
            )
    return [*tables, sizes]


def _counter_table(
    name: str, counts: Counter[str], total: int, top: int | None = None, sort: bool = True
) -> Table:
    table = Table(title=f"by {name}")
    table.add_column(name)
    table.add_column("tasks", justify="right")
    table.add_column("share", justify="right")
    items = counts.most_common() if sort else list(counts.items())
    shown = items[:top] if top else items
    for key, value in shown:
        table.add_row(key or "(empty)", str(value), f"{value / total:.0%}" if total else "-")
    if len(items) > len(shown):
        rest = sum(v for _, v in items[len(shown) :])
        table.add_row(
            f"... {len(items) - len(shown)} more",
            str(rest),
            f"{rest / total:.0%}" if total else "-",
        )
    return table


def _num(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() or value >= 100 else f"{value:,.1f}"
