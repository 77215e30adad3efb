"""Helpers shared by the notebooks: run folders, headline numbers, tables for people.

Every notebook takes an `out_dir` parameter, writes what it produced there, and ends by
calling `record_summary(out_dir, {...})`. The notebook test reads `summary.json` back, so the
numbers a notebook reports are the numbers the suite checks (`run_dir` and `record_summary`
live in `tbrl_lib.run_folder`, the floor below, so that training names its folders without
pandas; they are re-exported here). `show_config`,
`show_summary` and `warn_once` (`display.py`) make what a notebook shows readable;
`headline`, `tidy`, `table_html` and `folded` (`tables.py`) let a report lead with its result, and
`layout.layout_problems` checks that an executed notebook does. `follow_training(run, steps)`
(`training_progress.py`) shows a live panel of a training run in JupyterLab; `shown_path`
writes a path as a shared report shows it (`tbrl_lib.workspace`).
"""

from __future__ import annotations

from tbrl_lib.notebook_tools.display import show_config, show_summary, warn_once
from tbrl_lib.notebook_tools.tables import folded, headline, table_html, tidy
from tbrl_lib.notebook_tools.training_progress import follow_training
from tbrl_lib.run_folder import record_summary, run_dir
from tbrl_lib.workspace import shown_path

__all__ = [
    "folded",
    "follow_training",
    "headline",
    "record_summary",
    "run_dir",
    "show_config",
    "show_summary",
    "shown_path",
    "table_html",
    "tidy",
    "warn_once",
]
