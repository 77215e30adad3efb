"""`load_tasks` / `write_tasks` / `convert`: any supported format in, any format out.

Format detection (`formats.detect_format`, over the registry `formats.FORMATS`): a `.csv`
file is the upstream CSV schema, a `.parquet` file is tbrl's training Parquet, a directory with
`task.toml` is one Harbor task, one with `task.yaml` one TB1 task, any other directory is a
collection whose subdirectories are task dirs (hidden entries are ignored; a subdirectory that
is no task dir is reported).

Modes: `strict` raises the first `TaskFormatError` (in source order), its fix naming the
lenient mode; `lenient` skips the bad item and records why in the `LoadReport`/`WriteReport`,
and reads loosely written weights files (mapped or dropped, each change listed in
`LoadReport.warnings`); every command that reads tasks offers it as `--lenient`. Duplicate
ids are errors (the later one is the one skipped). Directory reads and writes run on a thread pool with a tqdm
bar; the CSV and Parquet row conversions are cheap and run in order.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

from tqdm.auto import tqdm

from tbrl_lib.tasks.errors import LoadReport, LoadResult, TaskFormatError
from tbrl_lib.tasks.formats import (
    FORMATS,
    DirFormat,
    FileFormat,
    detect_format,
    dir_format_of,
    format_named,
)
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.parquet_format import PromptFn
from tbrl_lib.workspace import InputNotFound, find_input

Mode = Literal["strict", "lenient"]
T = TypeVar("T")
R = TypeVar("R")


@dataclass
class WriteReport:
    """What a write did: tasks written, tasks skipped (lenient) and fields the format dropped."""

    target: str = ""
    written: int = 0
    skipped: list[TaskFormatError] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    """task id -> Task fields the format cannot hold (only the CSV schema drops any)."""


def load_tasks(
    path: Path | str, mode: Mode = "strict", *, workers: int = 4, progress: bool = True
) -> LoadResult:
    """Read every task at `path` (see the module docstring): a relative path from the
    current folder, else from the workspace (`data/tasks` from `notebooks/`). Returns
    `LoadResult(tasks, report)`."""
    try:
        path = find_input(path)
    except InputNotFound as exc:
        raise TaskFormatError(exc.path, "path", exc.problem, exc.fix) from None
    _check_mode(mode)
    fmt = detect_format(path)
    report = LoadReport(source=str(path))
    lenient = mode == "lenient"
    found = FORMATS.get(fmt)
    if isinstance(found, FileFormat):
        items: Iterable[Task | TaskFormatError] = _bar(
            found.read(path, lenient), progress, f"read {fmt}"
        )
    elif isinstance(found, DirFormat):
        items = [_read_dir(path, lenient)]
    else:
        read = partial(_read_dir, lenient=lenient)
        items = parallel_map(read, _task_dirs(path), workers, progress, "read task dirs")
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for item in items:
        if isinstance(item, Task) and item.id in seen:
            item = TaskFormatError(
                item.provenance.location,
                "id",
                f"duplicate task id {item.id!r} (first at {seen[item.id]})",
                "give every task a unique id",
            )
        if isinstance(item, TaskFormatError):
            if mode == "strict":
                raise _naming_lenient(item)
            report.skipped.append(item)
            continue
        seen[item.id] = item.provenance.location
        report.warnings += [
            TaskFormatError(item.provenance.location, note.field, note.problem, note.fix)
            for note in item.provenance.notes
        ]
        tasks.append(item)
    report.loaded = len(tasks)
    return LoadResult(tasks, report)


def write_tasks(
    tasks: Sequence[Task],
    fmt: str,
    out: Path | str,
    *,
    mode: Mode = "strict",
    workers: int = 4,
    progress: bool = True,
    prompt_fn: PromptFn | None = None,
) -> WriteReport:
    """Write `tasks` as `fmt` at `out`: a directory of task dirs (tb1, harbor) or one file
    (csv, parquet). An existing task dir of the same id is replaced; anything else in the
    way is an error. `prompt_fn` (parquet only, required there) renders each row's first prompt, e.g. the
    agent's `tbrl_lib.agent.prompts.initial_messages` (the task layer does not know it)."""
    out = Path(out)
    _check_mode(mode)
    target = format_named(fmt)
    if isinstance(target, FileFormat) and target.needs_prompt and prompt_fn is None:
        raise ValueError(
            f"{fmt} rows carry the agent's first prompt: pass prompt_fn, e.g. "
            "tbrl_lib.agent.prompts.initial_messages"
        )
    report = WriteReport(target=str(out))
    tasks = _unique(tasks, mode, report)
    if isinstance(target, DirFormat):
        out.mkdir(parents=True, exist_ok=True)
        results = parallel_map(
            lambda t: _write_dir(target.write, t, out), tasks, workers, progress, f"write {fmt}"
        )
        _collect(results, mode, report)
        return report
    rows = _collect(
        (_catch(target.to_row, t, prompt_fn) for t in _bar(tasks, progress, f"rows of {fmt}")),
        mode,
        report,
    )
    target.write_rows(rows, out)
    for task in tasks if target.dropped else ():
        lost = target.dropped(task)
        if lost:
            report.dropped[task.id] = lost
    return report


def convert(
    src: Path | str,
    fmt: str,
    out: Path | str,
    *,
    mode: Mode = "strict",
    workers: int = 4,
    progress: bool = True,
    prompt_fn: PromptFn | None = None,
) -> tuple[LoadReport, WriteReport]:
    """Load `src` (any format) and write it as `fmt` at `out`."""
    tasks, load_report = load_tasks(src, mode, workers=workers, progress=progress)
    return load_report, write_tasks(
        tasks, fmt, out, mode=mode, workers=workers, progress=progress, prompt_fn=prompt_fn
    )


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], workers: int, progress: bool, desc: str
) -> Iterator[R]:
    """`fn` over `items` on a thread pool, results in input order, with a tqdm bar.
    Stopping early (strict mode raising) cancels what has not started."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        yield from tqdm(
            pool.map(fn, items), total=len(items), desc=desc, disable=not progress, leave=False
        )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _read_dir(path: Path, lenient: bool = False) -> Task | TaskFormatError:
    fmt = dir_format_of(path)
    if fmt is None:
        markers = " or ".join(f"{f.marker} ({f.name})" for f in _dir_formats())
        return TaskFormatError(
            str(path),
            _dir_formats()[0].marker,
            f"not a task directory (no {markers})",
            f"add {markers}, or move the directory out",
        )
    return _catch(fmt.read, path, lenient)


def _dir_formats() -> list[DirFormat]:
    return [f for f in FORMATS.values() if isinstance(f, DirFormat)]


LENIENT_FIX = (
    "or load leniently (--lenient; `lenient: true` in a training config): tasks that do not "
    "load are skipped and loosely written weights read, each change reported"
)


def _naming_lenient(err: TaskFormatError) -> TaskFormatError:
    """A strict refusal whose fix also names the lenient mode (once)."""
    if "--lenient" in err.fix:
        return err
    return TaskFormatError(err.location, err.field, err.problem, f"{err.fix}; {LENIENT_FIX}")


def _task_dirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


def _write_dir(
    writer: Callable[[Task, Path], Path], task: Task, out: Path
) -> Path | TaskFormatError:
    target = out / task.id
    if target.exists():
        if dir_format_of(target) is None:
            return TaskFormatError(
                str(target),
                "directory",
                "exists and is not a task directory",
                "choose an empty output directory or remove it",
            )
        shutil.rmtree(target)
    return _catch(writer, task, out)


def _catch(fn: Callable[..., R], *args: object) -> R | TaskFormatError:
    try:
        return fn(*args)
    except TaskFormatError as err:
        return err


def _collect(results: Iterable[R | TaskFormatError], mode: Mode, report: WriteReport) -> list[R]:
    kept = []
    for result in results:
        if isinstance(result, TaskFormatError):
            if mode == "strict":
                raise result
            report.skipped.append(result)
        else:
            kept.append(result)
    report.written = len(kept)
    return kept


def _unique(tasks: Sequence[Task], mode: Mode, report: WriteReport) -> list[Task]:
    seen: set[str] = set()
    unique = []
    for task in tasks:
        if task.id in seen:
            err = TaskFormatError(
                task.provenance.location or task.id,
                "id",
                f"duplicate task id {task.id!r}",
                "give every task a unique id",
            )
            if mode == "strict":
                raise err
            report.skipped.append(err)
            continue
        seen.add(task.id)
        unique.append(task)
    return unique


def _bar(items: Iterable[T], progress: bool, desc: str) -> Iterable[T]:
    return tqdm(items, desc=desc, disable=not progress, leave=False)


def _check_mode(mode: str) -> None:
    if mode not in ("strict", "lenient"):
        raise ValueError(f"mode must be 'strict' or 'lenient', got {mode!r}")
