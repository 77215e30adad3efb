"""A run's folder: where a notebook, a command or a training run writes, and its summary.json.

Every run leaves a folder under the workspace's `outputs/` that explains itself (wherever the
notebook or command runs: `tbrl_lib.workspace`); `run_dir` names and creates it, `record_summary` writes the headline numbers the notebook tests read back. Standard library
only, so that training and evaluation name their folders without `notebook_tools` (pandas),
which re-exports both for the notebooks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tbrl_lib.workspace import workspace_path


def run_dir(out_dir: str | Path, name: str) -> Path:
    """`out_dir` if given (relative to the current folder), else the workspace's
    `outputs/<name>-<timestamp>`; created either way."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(out_dir) if out_dir else workspace_path("outputs", f"{name}-{stamp}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_summary(out_dir: str | Path, summary: dict[str, Any]) -> Path:
    """Write `summary` as `out_dir/summary.json` (sorted keys, anything else as text)."""
    path = Path(out_dir) / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return path
