"""Helpers shared by the notebooks: run folders, headline numbers, tables for people.

Every notebook takes an `out_dir` parameter, writes what it produced there, and ends by
calling `record_summary(out_dir, {...})`. The notebook test reads `summary.json` back,
so the numbers a notebook reports are the numbers the suite checks. `show_config`,
`show_summary` and `warn_once` (`display.py`) make what a notebook shows readable;
`headline`, `tidy`, `table_html` and `folded` (`tables.py`) let a report lead with its result, and
`layout.layout_problems` checks that an executed notebook does.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tbrl_lib.notebook_tools.display import show_config, show_summary, warn_once
from tbrl_lib.notebook_tools.tables import folded, headline, table_html, tidy

__all__ = [
    "folded",
    "headline",
    "record_summary",
    "run_dir",
    "show_config",
    "show_summary",
    "table_html",
    "tidy",
    "warn_once",
]


def run_dir(out_dir: str | Path, name: str) -> Path:
    """`out_dir` if given, else `outputs/<name>-<timestamp>`; created either way."""
    path = (
        Path(out_dir) if out_dir else Path("outputs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_summary(out_dir: str | Path, summary: dict[str, Any]) -> Path:
    path = Path(out_dir) / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return path
