"""Benchmark: the 331 upstream CSV rows -> Harbor task dirs -> training Parquet, and back.

    .venv/bin/python benchmarks/bench_tasks.py [--csv PATH] [--repeats 3] [--workers 1 4] [--tmp DIR]

The CSV defaults to the upstream one where `tbrl_lib.upstream` finds it (TBRL_UPSTREAM_DIR,
or data/upstream/ filled by `tbrl upstream fetch`); nothing beside the repository is read.

Each stage is timed `--repeats` times (median shown) with tbrl's loader at each worker
count, next to a baseline measured in the same run: pandas `read_csv` + `json.loads` and
plain file writes, with no validation, no error reporting and no format detection — the
floor that shows what validation and exact round trips cost. The cache of parsed test
names is cleared before every timed call, so each stage is timed cold, as in separate
processes. Prints one table; asserts nothing (speed is reported, not tested).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tbrl_lib import upstream  # noqa: E402 - after the sys.path line, for a plain `python benchmarks/...`
from tbrl_lib.agent.prompts import initial_messages  # noqa: E402
from tbrl_lib.tasks import load_tasks, write_tasks  # noqa: E402
from tbrl_lib.tasks.model import _parsed_test_names  # noqa: E402


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        _parsed_test_names.cache_clear()  # each stage pays for its own test-file parses
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def baseline(csv_path: Path, out: Path) -> int:
    """Read with pandas and write Harbor-like files with no checks at all."""
    import pandas as pd

    frame = pd.read_csv(csv_path, keep_default_na=False, dtype=str)
    for row in frame.itertuples():
        root = out / row.task_id
        (root / "environment").mkdir(parents=True, exist_ok=True)
        (root / "tests").mkdir(exist_ok=True)
        (root / "instruction.md").write_text(row.prompt)
        (root / "environment" / "Dockerfile").write_text(row.dockerfile)
        for rel, text in json.loads(row.additional_files).items():
            path = root / "environment" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (root / "tests" / "test_outputs.py").write_text(row.test_functions)
        (root / "tests" / "test_weights.json").write_text(row.test_weights)
    return len(frame)


def stages(csv_path: Path, out: Path, workers: int, repeats: int, fresh) -> tuple[list[float], int]:
    """Time each stage; returns [read csv, write harbor, read harbor, write parquet, read
    parquet, csv->harbor->parquet total] and the number of tasks read back from Parquet."""
    t_csv, result = timed(lambda: load_tasks(csv_path, progress=False), repeats)
    tasks = result.tasks
    t_wh, _ = timed(
        lambda: write_tasks(
            tasks, "harbor", out / f"harbor{next(fresh)}", workers=workers, progress=False
        ),
        repeats,
    )
    harbor_dir = next(out.glob("harbor*"))
    t_rh, result = timed(lambda: load_tasks(harbor_dir, workers=workers, progress=False), repeats)
    harbor_tasks = result.tasks
    t_wp, _ = timed(
        lambda: write_tasks(
            harbor_tasks, "parquet", out / "t.parquet", progress=False, prompt_fn=initial_messages
        ),
        repeats,
    )
    t_rp, result = timed(lambda: load_tasks(out / "t.parquet", progress=False), repeats)
    return [t_csv, t_wh, t_rh, t_wp, t_rp, t_csv + t_wh + t_rh + t_wp], len(result.tasks)


def run(csv_path: Path, repeats: int, worker_counts: list[int], tmp_root: Path | None) -> Table:
    table = Table(title=f"{csv_path.name} -> Harbor dirs -> Parquet, median of {repeats} (seconds)")
    for column in (
        "pipeline",
        "read csv",
        "write harbor",
        "read harbor",
        "write parquet",
        "read parquet",
        "csv->harbor->parquet",
    ):
        table.add_column(column, justify="left" if column == "pipeline" else "right")
    fresh = iter(range(1_000_000))  # every repeat writes into a new directory
    with tempfile.TemporaryDirectory(dir=tmp_root) as tmp:
        base_time, count = timed(
            lambda: baseline(csv_path, Path(tmp) / f"baseline{next(fresh)}"), repeats
        )
        table.add_row(
            "baseline (pandas, no checks)",
            "-",
            f"{base_time:.2f}",
            "-",
            "-",
            "-",
            f"{base_time:.2f}",
        )
        for workers in worker_counts:
            out = Path(tmp) / f"w{workers}"
            times, count_back = stages(csv_path, out, workers, repeats, fresh)
            assert count_back == count, "tasks were lost on the way"
            table.add_row(f"tbrl, {workers} worker(s)", *(f"{t:.2f}" for t in times))
        size_kb = (out / "t.parquet").stat().st_size / 1024
        table.caption = (
            f"{count} tasks; parquet {size_kb:,.0f} KiB; task dirs under {tmp_root or tempfile.gettempdir()}"
            "; writing dirs is file-system bound (compare with the baseline row)"
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--csv",
        type=Path,
        default=upstream.upstream_path(upstream.CSV_NAME),
        help="The upstream latest_verified.csv (default: the upstream folder's).",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument(
        "--tmp",
        type=Path,
        default=None,
        help="Where to write the task dirs (default: system temp).",
    )
    args = parser.parse_args()
    if args.csv is None:
        raise SystemExit(f"no CSV given: pass --csv PATH, or {upstream.hint()}")
    if not args.csv.exists():
        raise SystemExit(
            f"{args.csv} not found: pass --csv PATH to the upstream latest_verified.csv"
        )
    Console(width=140).print(run(args.csv, args.repeats, args.workers, args.tmp))


if __name__ == "__main__":
    main()
