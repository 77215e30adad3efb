"""Blocks a report shows a person: the headline it opens with, tables of numbers a person
reads, and detail folded away.

- `headline(lines)`: the few lines a report leads with, as HTML marked `tbrl-headline` (the
  notebook test finds the headline by that class).
- `tidy(frame, index=..., labels=...)`: numbers to a few significant digits, blanks where a
  value is missing, one column as the index (no pandas row numbers beside it), columns
  renamed to short labels and those with no value left out.
- `folded(title, body)`: a closed `<details>` element: one line until a reader opens it.
- `table_html(frame)`: a frame as HTML with its text whole (a notebook's own display of a
  frame cuts text past 50 characters: commands, settings).

Left out: colours and conditional styling (pandas' Styler); the text is what matters.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from numbers import Number
from typing import Any

import pandas as pd

HEADLINE_CLASS = "tbrl-headline"


def number_text(value: Any, digits: int = 3) -> str:
    """`value` as a person reads it: `digits` significant digits, thousands separated, tiny
    numbers in scientific notation, blank when missing (None or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or not isinstance(value, Number):
        return str(value)
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    if abs(value) < 10**-(digits):
        return f"{value:.{max(digits - 2, 0)}e}"
    return f"{value:.{digits}g}"


def tidy(
    frame: pd.DataFrame,
    index: str | None = None,
    labels: Mapping[str, str] | None = None,
    digits: int = 3,
) -> pd.DataFrame:
    """`frame` as text for a report (see the module docstring). `labels` maps column names to
    the headers shown and, when given, picks and orders the columns; `index` is the column
    that becomes the index (kept under its label)."""
    if labels is not None:
        missing = [c for c in ([index] if index else []) if c not in frame]
        if missing:
            raise KeyError(f"tidy: no column {missing[0]!r} in {list(frame.columns)}")
        keep = [c for c in labels if c in frame and c != index]
        frame = frame[([index] if index else []) + keep]
    shown = frame.map(lambda v: number_text(v, digits))
    shown = shown.loc[:, [c for c in shown if c == index or (shown[c] != "").any()]]
    if index:
        shown = shown.set_index(index)
        shown.index.name = (labels or {}).get(index, index)
    return shown.rename(columns=dict(labels or {}))


def headline(lines: Sequence[str]) -> str:
    """The lines a report opens with (each already HTML: callers escape what they insert)."""
    body = "".join(f"<li>{line}</li>" for line in lines)
    return (
        f"<div class='{HEADLINE_CLASS}' style='font-size:1.1em;line-height:1.5'>"
        f"<ul style='margin:0.3em 0'>{body}</ul></div>"
    )


def table_html(frame: pd.DataFrame) -> str:
    """`frame` as an HTML table, no cell text cut short."""
    return frame.to_html(border=0, na_rep="")


def folded(title: str, body: str | pd.DataFrame) -> str:
    """A closed `<details>` holding `body` (HTML, or a frame as `table_html`)."""
    inner = table_html(body) if isinstance(body, pd.DataFrame) else body
    return f"<details><summary>{html.escape(title)}</summary>{inner}</details>"
