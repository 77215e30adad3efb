"""MkDocs hook: the training settings reference, made from `TrainConfig` when the site builds.

`docs/reference/settings.md` holds the prose and one marker line; this hook replaces the marker
with one table per section, from `tbrl_lib.overrides.settings_reference(TrainConfig)`, the rows
`tbrl train settings` prints. Nothing generated is committed, so the page cannot go stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The checkout this site documents, ahead of any installed copy of tbrl_lib.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# The config class as `tbrl train settings` reads it (so a move inside train/ needs no edit here).
from tbrl_lib.cli.train import TrainConfig  # noqa: E402
from tbrl_lib.overrides import settings_reference  # noqa: E402

MARKER = "<!-- settings-reference -->"
PAGE = "reference/settings.md"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def reference_markdown() -> str:
    """Every setting of `TrainConfig`, grouped by its first dotted part (top-level keys first)."""
    sections: dict[str, list[tuple[str, str, str]]] = {}
    for key, default, doc in settings_reference(TrainConfig):
        section = key.split(".")[0] if "." in key else ""
        sections.setdefault(section, []).append((key, default, doc))
    out = []
    for section, rows in sections.items():
        out.append(f"## `{section}`" if section else "## Top level")
        out.append("")
        out.append("| key | default | what it does |")
        out.append("|---|---|---|")
        for key, default, doc in rows:
            out.append(f"| `{key}` | `{_cell(default)}` | {_cell(doc)} |")
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker line {MARKER!r}; put it back where the tables go")
    return markdown.replace(MARKER, reference_markdown())
