"""The task formats tbrl speaks, one record each, in one registry: `FORMATS`.

A format is a directory layout (one task per directory, known by a marker file: Harbor's
`task.toml`, TB1's `task.yaml`) or a file of rows (the upstream CSV, the training Parquet).
The loader's detection, reading and writing, `tbrl tasks convert --format`'s choices and the
synthetic-data export all iterate over `FORMATS`; a new format is its module plus one line
there. Left out: formats chosen by content rather than by marker file or suffix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tbrl_lib.tasks import csv_format, harbor_format, parquet_format, tb1_format
from tbrl_lib.tasks.errors import TaskFormatError
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.parquet_format import PromptFn


@dataclass(frozen=True)
class DirFormat:
    """One task per directory, known by its marker file."""

    name: str
    marker: str
    read: Callable[[Path, bool], Task]
    """`read(task_dir, lenient)`; a bad directory raises `TaskFormatError`."""
    write: Callable[[Task, Path], Path]
    """`write(task, out_dir)` writes `out_dir/<task.id>/` and returns it."""

    def detects(self, path: Path) -> bool:
        return path.is_dir() and (path / self.marker).is_file()

    @property
    def export_name(self) -> str:
        return self.name


@dataclass(frozen=True)
class FileFormat:
    """One file, a row per task, known by its suffix."""

    name: str
    suffixes: tuple[str, ...]
    read: Callable[[Path, bool], Iterable[Task | TaskFormatError]]
    """`read(file, lenient)`: a `Task` or a `TaskFormatError` per row; an unreadable file
    raises `TaskFormatError`."""
    to_row: Callable[[Task, PromptFn | None], object]
    """One task as a row (raises `TaskFormatError` for a task the format cannot hold)."""
    write_rows: Callable[[list, Path], None]
    needs_prompt: bool = False
    """Its rows carry the agent's first prompt: writing needs a `prompt_fn`."""
    dropped: Callable[[Task], list[str]] | None = None
    """The `Task` fields a round trip through this format loses, when it loses any."""

    def detects(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in self.suffixes

    @property
    def export_name(self) -> str:
        return f"tasks{self.suffixes[0]}"


TaskFormat = DirFormat | FileFormat


def _parquet_row(task: Task, prompt_fn: PromptFn | None) -> object:
    assert prompt_fn is not None  # write_tasks refuses a parquet write without one
    return parquet_format.task_to_record(task, prompt_fn)


FORMATS: dict[str, TaskFormat] = {
    f.name: f
    for f in (
        DirFormat(
            "harbor", "task.toml", harbor_format.read_harbor_dir, harbor_format.write_harbor_dir
        ),
        DirFormat("tb1", "task.yaml", tb1_format.read_tb1_dir, tb1_format.write_tb1_dir),
        FileFormat(
            "csv",
            (".csv",),
            csv_format.read_csv,
            lambda task, _: csv_format.task_to_row(task),
            csv_format.write_csv,
            dropped=csv_format.dropped_fields,
        ),
        FileFormat(
            "parquet",
            (".parquet", ".pq"),
            lambda path, _lenient: parquet_format.read_parquet(path),
            _parquet_row,
            parquet_format.write_parquet,
            needs_prompt=True,
        ),
    )
}
"""Every format by name, in the order detection asks them."""


def format_named(name: str) -> TaskFormat:
    """The format called `name`, or a `ValueError` listing the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; use one of {', '.join(FORMATS)}") from None


def dir_format_of(path: Path) -> DirFormat | None:
    """The directory format `path` is one task of, or None."""
    return next((f for f in FORMATS.values() if isinstance(f, DirFormat) and f.detects(path)), None)


def detect_format(path: Path) -> str:
    """A format's name, or `collection` (a directory of task dirs)."""
    path = Path(path)
    if not path.exists():
        raise TaskFormatError(str(path), "path", "does not exist", "check the path")
    found = next((f for f in FORMATS.values() if f.detects(path)), None)
    if found is not None:
        return found.name
    if path.is_dir():
        return "collection"
    suffixes = sorted(s for f in FORMATS.values() if isinstance(f, FileFormat) for s in f.suffixes)
    raise TaskFormatError(
        str(path),
        "file",
        f"unknown task file type {path.suffix.lower()!r}",
        f"give a task file ({', '.join(suffixes)}) or a task directory",
    )
