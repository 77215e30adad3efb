"""Helpers for `notebooks/03_judge_comparison.ipynb`: which judges can run here, the lines
its report leads with, and the shareable HTML report (the executed notebook rendered with
`nbconvert --no-input`)."""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

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


def headline_lines(
    ranking: pd.DataFrame, cases: int, suites: list[str], held_out: dict[str, Any] | None = None
) -> list[str]:
    """Three or four lines (HTML): the best judge's pass rate with its interval and Spearman,
    every judge's pass rate, and the rule judge on cases it was not tuned on (`held_out`:
    its leave-one-out pass rate and Spearman)."""
    best = ranking.iloc[0]
    lines = [
        f"{len(ranking)} judges on {cases} labelled cases ({html.escape(', '.join(suites))})",
        f"<b>best: {html.escape(str(best['judge']))}</b>, pass rate {best['pass_rate']:.2f} "
        f"[{best['pass_ci_low']:.2f}, {best['pass_ci_high']:.2f}] (Wilson 95%), "
        f"Spearman {best['spearman']:.2f}",
        "pass rate by judge: "
        + ", ".join(
            f"{html.escape(str(j))} {r:.2f}" for j, r in zip(ranking["judge"], ranking["pass_rate"])
        ),
    ]
    if held_out:
        lines.append(
            f"<b>rule judge on cases it was not tuned on</b> (leave-one-out): pass rate "
            f"{held_out['pass_rate']:.2f}, Spearman {held_out['spearman']:.2f}"
        )
    return lines
