"""What a notebook shows a person: settings and numbers as tables, each warning once.

- `show_config(obj)`: a pydantic model, dataclass or dict as a two-column table, nested
  fields flattened with dots (`sandbox.memory_mb`), tuples and lists joined, enums as text,
  paths relative to the workspace (`outputs/04_train-...`): no reprs, and no folder of this
  machine, in a report.
- `show_summary(summary)`: the same for a notebook's headline numbers.
- `warn_once()`: from here on, each distinct warning or log warning is shown once per
  notebook (a sandbox that cannot limit storage says so once, not once per container).

Left out: styling beyond what pandas renders; plots live with their packages.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Mapping
from enum import Enum
from pathlib import PurePath
from typing import Any

import pandas as pd
from pydantic import BaseModel

from tbrl_lib.workspace import shown_path


def flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    """Dotted key -> readable text for every leaf of a model, dataclass or mapping."""
    fields = _fields(obj)
    if fields is None:
        return {prefix or "value": value_text(obj)}
    out: dict[str, str] = {}
    for key, value in fields.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if _fields(value):
            out |= flatten(value, name)
        else:
            out[name] = value_text(value)
    return out


def show_config(obj: Any, columns: tuple[str, str] = ("setting", "value")) -> pd.DataFrame:
    """`obj` as a two-column table (the notebook displays the returned frame)."""
    rows = flatten(obj)
    return pd.DataFrame(
        {columns[1]: list(rows.values())}, index=pd.Index(list(rows), name=columns[0])
    )


def show_summary(summary: Mapping[str, Any]) -> pd.DataFrame:
    """A notebook's headline numbers (what `record_summary` wrote) as a table."""
    return show_config(summary, columns=("headline number", "value"))


class _Once(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def warn_once() -> None:
    """Show each distinct warning (Python `warnings` and log records at WARNING and above)
    once from now on. Safe to call again."""
    warnings.simplefilter("once", append=True)  # after the filters that hide ResourceWarning &c.
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    for handler in root.handlers:
        if not any(isinstance(f, _Once) for f in handler.filters):
            handler.addFilter(_Once())


def _fields(obj: Any) -> Mapping[str, Any] | None:
    if isinstance(obj, BaseModel):
        return {name: getattr(obj, name) for name in type(obj).model_fields}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return obj
    return None


def value_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, PurePath):
        return shown_path(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(value_text(v) for v in value) if value else "-"
    return str(value)
