"""Helpers shared by the notebooks: run folders and headline numbers.

Every notebook takes an `out_dir` parameter, writes what it produced there, and ends by
calling `record_summary(out_dir, {...})`. The notebook test reads `summary.json` back,
so the numbers a notebook reports are the numbers the suite checks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def run_dir(out_dir: str | Path, name: str) -> Path:
    """`out_dir` if given, else `outputs/<name>-<timestamp>`; created either way."""
    path = Path(out_dir) if out_dir else Path("outputs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_summary(out_dir: str | Path, summary: dict[str, Any]) -> Path:
    path = Path(out_dir) / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return path
