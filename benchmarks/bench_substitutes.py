"""Benchmark: do Dockerfiles written for the published base images build on the substitutes?

    .venv/bin/python benchmarks/bench_substitutes.py [--tasks SRC ...] [--sample 6] [--seed 0]
        [--baseline ubuntu-24-04=tbrl/ubuntu-like:trixie python-3-13=tbrl/base:trixie]

Builds each task's image twice in one run: on today's substitutes (`sandbox.ensure_image`, the
path every rollout takes) and, as the baseline, on other local images given per family (by
default the revision-1 substitutes, whose Debian pytest and Debian pip were in the way), by
rewriting the FROM lines to them. Sources: task folders or files (any format `load_tasks`
reads, read leniently), plus `--sample` rows per family from the upstream CSV where
`tbrl_lib.upstream` finds it (TBRL_UPSTREAM_DIR), drawn with `--seed`; rows that install a
deep-learning stack (torch, tensorflow, ...) are left out of the sample, for time. Prints one
row per task (built or not, seconds, the first line of the failure) and the totals; asserts
nothing. Builds reach PyPI and the Debian mirror; a build that needs another host fails here.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tbrl_lib import upstream  # noqa: E402 - after the sys.path line, for a plain `python benchmarks/...`
from tbrl_lib.docker.base_images import FAMILIES, family_of  # noqa: E402
from tbrl_lib.sandbox import SandboxError  # noqa: E402
from tbrl_lib.sandbox.backends.docker.images import ensure_image  # noqa: E402
from tbrl_lib.tasks import load_tasks  # noqa: E402
from tbrl_lib.tasks.dockerfile import base_images, rewrite_bases  # noqa: E402
from tbrl_lib.tasks.model import Task  # noqa: E402

HEAVY = re.compile(r"torch|tensorflow|transformers|jax|opencv", re.IGNORECASE)
DEFAULT_BASELINE = ["ubuntu-24-04=tbrl/ubuntu-like:trixie", "python-3-13=tbrl/base:trixie"]


def upstream_sample(per_family: int, seed: int) -> list[Task]:
    path = upstream.upstream_path(upstream.CSV_NAME)
    if path is None or per_family == 0:
        return []
    tasks = load_tasks(path, "lenient", progress=False).tasks
    rng, sample = random.Random(seed), []
    for family in FAMILIES:
        pool = [
            t
            for t in tasks
            if any(family_of(b) == family for b in base_images(t))
            and not HEAVY.search(t.environment.dockerfile or "")
        ]
        sample += rng.sample(pool, min(per_family, len(pool)))
    return sample


def on_baseline(task: Task, images: dict[str, str]) -> Task | None:
    """`task` with each FROM of a family pointed at that family's baseline image."""
    names = {}
    for name in base_images(task):
        family = family_of(name)
        short = family.repository.rsplit("/", 1)[-1] if family else None
        if short in images:
            names[name] = images[short]
    if not names or task.environment.dockerfile is None:
        return None
    env = task.environment.model_copy(
        update={"dockerfile": rewrite_bases(task.environment.dockerfile, names)}
    )
    return task.model_copy(update={"environment": env})


async def build(task: Task | None) -> tuple[str, float, str]:
    if task is None:
        return "-", 0.0, "no family image to compare"
    started = time.monotonic()
    try:
        await ensure_image(task)
    except SandboxError as err:
        why = str(err).splitlines()[0].removeprefix(f"task {task.id}: ")
        return ("no" if err.task_fault else "infra"), time.monotonic() - started, why
    return "yes", time.monotonic() - started, ""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="*", default=[], help="Task sources to build.")
    parser.add_argument("--sample", type=int, default=6, help="Upstream rows per family.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", nargs="*", default=DEFAULT_BASELINE, metavar="FAMILY=IMAGE")
    args = parser.parse_args()
    baseline = dict(item.split("=", 1) for item in args.baseline)
    tasks = [t for src in args.tasks for t in load_tasks(src, "lenient", progress=False).tasks]
    tasks += upstream_sample(args.sample, args.seed)
    table = Table(title="Dockerfiles for the published images, built on local stand-ins")
    for column in ("task", "base", "baseline", "s", "substitute", "s", "why not (substitute)"):
        table.add_column(column, overflow="fold")
    totals = {"baseline": 0, "substitute": 0}
    for task in tasks:
        before, before_s, before_why = await build(on_baseline(task, baseline))
        after, after_s, after_why = await build(task)
        totals["baseline"] += before == "yes"
        totals["substitute"] += after == "yes"
        table.add_row(
            task.id,
            ", ".join(base_images(task)),
            before if before == "yes" else f"{before}: {before_why[:160]}",
            f"{before_s:.0f}",
            after,
            f"{after_s:.0f}",
            after_why[:300],
        )
    table.caption = (
        f"built: baseline {totals['baseline']}/{len(tasks)}, "
        f"substitutes {totals['substitute']}/{len(tasks)}"
    )
    Console(width=250).print(table)


if __name__ == "__main__":
    asyncio.run(main())
