"""Helpers for `notebooks/03_judge_comparison.ipynb`: which judges can run here, and the
shareable HTML report (the executed notebook rendered with `nbconvert --no-input`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tbrl_lib.notebook_tools.execute import render_html

API_JUDGES = {
    "ANTHROPIC_API_KEY": "anthropic:claude-sonnet-4-20250514",
    "OPENAI_API_KEY": "openai:gpt-4o-mini",
}


def available_judges(requested: str) -> list[str]:
    """The requested specs, plus an API judge for each key set in the environment (and the
    Claude Code CLI when it is installed). Offline this is just the requested specs."""
    specs = [s.strip() for s in requested.split(",") if s.strip()]
    for env, spec in API_JUDGES.items():
        if os.environ.get(env) and spec not in specs:
            specs.append(spec)
    if (
        shutil.which("claude")
        and os.environ.get("TBRL_USE_CLAUDE_CLI")
        and "claude-cli" not in specs
    ):
        specs.append("claude-cli")
    return specs


def render_report(executed_notebook: str | Path) -> Path:
    """Self-contained HTML next to the executed notebook, code cells hidden."""
    return render_html(Path(executed_notebook))
