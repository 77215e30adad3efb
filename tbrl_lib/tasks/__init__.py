"""tbrl_lib.tasks: the `Task` model and its formats (upstream CSV, TB1 dirs, Harbor dirs,
training Parquet).

Public API: `Task` (model.py), `load_tasks(path, mode)` -> `LoadResult(tasks, report)`,
`write_tasks(tasks, fmt, out)`, `convert(src, fmt, out)`, `detect_format(path)`, the
formats by name (`FORMATS`, formats.py: a new format is its module plus one line there),
`TaskFormatError`, and `weights.weighted_score(tests, outcomes)`.
"""

from tbrl_lib.tasks.errors import LoadReport, LoadResult, TaskFormatError
from tbrl_lib.tasks.formats import FORMATS, detect_format
from tbrl_lib.tasks.loader import WriteReport, convert, load_tasks, write_tasks
from tbrl_lib.tasks.model import Difficulty, Environment, Limits, Provenance, Task, Tests
from tbrl_lib.tasks.weights import weighted_score

__all__ = [
    "FORMATS",
    "Difficulty",
    "Environment",
    "Limits",
    "LoadReport",
    "LoadResult",
    "Provenance",
    "Task",
    "TaskFormatError",
    "Tests",
    "WriteReport",
    "convert",
    "detect_format",
    "load_tasks",
    "weighted_score",
    "write_tasks",
]
