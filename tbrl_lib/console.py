"""The rich console every `tbrl` command prints through.

Rich wraps at 80 columns when output is not a terminal, so a table redirected to a file
cuts task ids short. `console()` gives a terminal its own width, a notebook its own
rendering, and anything else (files, pipes, CI logs) `FILE_WIDTH` columns.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

FILE_WIDTH = 200


def console(**kwargs: Any) -> Console:
    """A `rich.Console`; `FILE_WIDTH` columns wide unless it writes to a terminal or notebook."""
    out = Console(**kwargs)
    if "width" not in kwargs and not out.is_terminal and not out.is_jupyter:
        out = Console(width=FILE_WIDTH, **kwargs)
    return out
