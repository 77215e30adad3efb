"""Does an executed notebook read as a report: its result first, nothing longer than a screen.

`layout_problems(notebook)` lists what breaks the two rules (empty when none):
- the headline (`tables.headline`) and a plot come before the first table;
- no cell's outputs together are longer than a screen (`SCREEN_LINES` lines).

How long an output is, in lines (`output_lines`): text counts its lines; HTML counts the
elements that start a line (rows, list items, paragraphs, headings, blocks) plus the lines
of preformatted text, and a closed `<details>` counts its summary alone; an image counts
its height in `LINE_PX` pixels; a widget (a progress bar) counts one line.

Left out: the width of an output (wide tables are made narrower where they are built).
"""

from __future__ import annotations

import base64
import json
import math
import struct
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from tbrl_lib.notebook_tools.tables import HEADLINE_CLASS

SCREEN_LINES = 60
LINE_PX = 20
_LINE_TAGS = {"tr", "li", "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "div", "summary"}
_WIDGET = "application/vnd.jupyter.widget-view+json"


class _Lines(HTMLParser):
    """Counts the lines an HTML fragment takes when shown, folded `<details>` closed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines = 0
        self.closed_depth = 0  # > 0 inside a closed <details> (its summary still shows)
        self.in_summary = False
        self.pre_depth = 0
        self.stack: list[tuple[str, bool]] = []  # (tag, preformatted)

    def visible(self) -> bool:
        return self.closed_depth == 0 or self.in_summary

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "details" and (self.closed_depth or "open" not in attributes):
            self.closed_depth += 1
        if tag == "summary":
            self.in_summary = True
        pre = tag == "pre" or "pre-wrap" in (attributes.get("style") or "")
        if tag not in ("br", "hr", "img"):  # void elements have no end tag
            self.stack.append((tag, pre))
            self.pre_depth += pre
        if tag in _LINE_TAGS and self.visible():
            self.lines += 1

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            name, pre = self.stack.pop()
            self.pre_depth -= pre
            if name == tag:
                break
        if tag == "summary":
            self.in_summary = False
        if tag == "details" and self.closed_depth:
            self.closed_depth -= 1

    def handle_data(self, data: str) -> None:
        if self.pre_depth and self.visible():
            self.lines += data.strip("\n").count("\n")


def html_lines(fragment: str) -> int:
    parser = _Lines()
    parser.feed(fragment)
    parser.close()
    return parser.lines


def png_height(data: str) -> int:
    """The height in pixels of a base64 PNG (from its header)."""
    raw = base64.b64decode(data[:64])
    return struct.unpack(">I", raw[20:24])[0]


def output_lines(output: dict[str, Any]) -> int:
    """How many lines one cell output takes when shown (see the module docstring)."""
    if output.get("output_type") == "stream":
        return _text(output.get("text")).count("\n") + 1
    data = output.get("data") or {}
    if _WIDGET in data:
        return 1
    if "image/png" in data:
        return math.ceil(png_height(_text(data["image/png"])) / LINE_PX)
    if "text/html" in data:
        return html_lines(_text(data["text/html"]))
    if "text/plain" in data:
        return _text(data["text/plain"]).count("\n") + 1
    if output.get("output_type") == "error":
        return len(output.get("traceback") or []) + 1
    return 0


def layout_problems(
    notebook: dict[str, Any] | str | Path, screen_lines: int = SCREEN_LINES
) -> list[str]:
    """What keeps the executed `notebook` (a path or its JSON) from reading as a report."""
    if not isinstance(notebook, dict):
        notebook = json.loads(Path(notebook).read_text())
    problems: list[str] = []
    first: dict[str, int] = {}
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    position = 0
    for number, cell in enumerate(code, start=1):
        lines = 0
        for output in cell.get("outputs", []):
            position += 1
            lines += output_lines(output)
            for kind in _kinds(output):
                first.setdefault(kind, position)
        if lines > screen_lines:
            source = "".join(cell["source"]).strip().splitlines()
            problems.append(
                f"code cell {number} ({source[0][:60] if source else ''!r}) shows {lines} "
                f"lines, more than a screen ({screen_lines})"
            )
    for lead in ("headline", "plot"):
        if lead not in first:
            problems.append(f"no {lead} in the outputs")
        elif "table" in first and first["table"] < first[lead]:
            problems.append(f"a table comes before the {lead}")
    return problems


def _kinds(output: dict[str, Any]) -> list[str]:
    data = output.get("data") or {}
    page = _text(data.get("text/html", ""))
    kinds = ["headline"] if HEADLINE_CLASS in page else []
    if "image/png" in data or "<img" in page:
        kinds.append("plot")
    if "<table" in page:
        kinds.append("table")
    return kinds


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")
