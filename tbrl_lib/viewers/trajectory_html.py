"""A trajectory as one static, self-contained HTML page: readable offline, in any browser.

`trajectory_page(traj, reward=None)` returns the document: the header (task, policy, turns,
how it ended), one collapsible `<details>` per turn holding what the live viewer shows for
it (`viewer.turn_html`: thinking, the reply, each tool call's action, output and ok flag,
timings), the termination, and a reward table when a breakdown is given (a
`RewardBreakdown`, or any mapping: the eval report passes the trial's test score and
outcome). `write_trajectory_page(traj, path, reward)` writes it; `trajectory_html(traj,
reward)` is the same body as a fragment to embed (notebook 02 shows its oracle episode so). Inline CSS only, no script
and no CDN, so a report copied anywhere still shows its trajectories.

Callers: the eval report (`tbrl_lib.evaluate.report.write_trajectory_pages`) links each
trial to its page; training reports can call the same function.
Left out: stepping through turns interactively (the ipywidgets viewer does that live).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.viewers.viewer import header_html, turn_html

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em}
details{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 10px}
summary{cursor:pointer;font-weight:600}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}"""
_DETAILS = "border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 10px"


def trajectory_page(
    traj: Trajectory, reward: Mapping[str, Any] | Any = None, title: str | None = None
) -> str:
    """The whole HTML document for `traj` (see the module docstring)."""
    heading = html.escape(title or f"{traj.task_id} ({traj.policy})")
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{heading}</title>"
        f"<style>{_CSS}</style></head><body><h2>{heading}</h2>\n"
        f"{trajectory_html(traj, reward)}\n</body></html>"
    )


def trajectory_html(
    traj: Trajectory, reward: Mapping[str, Any] | Any = None, open_turn: int | None = None
) -> str:
    """The page's body alone, styled inline, to embed in another document: a notebook shows
    it with `IPython.display.HTML`, and the notebook's HTML report then holds every turn.
    The turn at (0-based) `open_turn` is shown open, the others folded; by default the last."""
    opened = len(traj.turns) - 1 if open_turn is None else open_turn
    parts = [header_html(traj)]
    for i, turn in enumerate(traj.turns):
        calls = ", ".join(c.kind + ("" if c.ok else " (failed)") for c in turn.calls) or "no call"
        parts.append(
            f"<details{' open' if i == opened else ''} style='{_DETAILS}'>"
            f"<summary style='cursor:pointer;font-weight:600'>Turn {turn.index}: "
            f"{html.escape(calls)}</summary>{turn_html(traj, i)}</details>"
        )
    if not traj.turns:
        parts.append("<p><i>no turns</i></p>")
    ended = traj.termination.value if traj.termination else "not recorded"
    parts.append(
        f"<h3>Termination</h3><p><b>{html.escape(ended)}</b> "
        f"{html.escape(traj.termination_message)}</p>"
    )
    if reward is not None:
        parts.append("<h3>Reward</h3>" + _table(_as_mapping(reward)))
    return "\n".join(parts)


def write_trajectory_page(
    traj: Trajectory, path: str | Path, reward: Mapping[str, Any] | Any = None
) -> Path:
    """Write `trajectory_page(traj, reward)` to `path` (parents created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(trajectory_page(traj, reward), encoding="utf-8")
    return path


def _as_mapping(reward: Mapping[str, Any] | Any) -> Mapping[str, Any]:
    if isinstance(reward, Mapping):
        return reward
    if hasattr(reward, "to_dict"):
        return reward.to_dict()
    raise TypeError(f"reward must be a mapping or have to_dict(), got {type(reward).__name__}")


def _table(rows: Mapping[str, Any]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        if isinstance(value, (list, tuple)):
            return ", ".join(map(str, value)) or "-"
        return "-" if value is None else str(value)

    flat = {  # a nested mapping (a breakdown's scores, weights) as `scores.tests` rows
        f"{k}.{sub}" if isinstance(v, Mapping) else k: inner
        for k, v in rows.items()
        for sub, inner in (v.items() if isinstance(v, Mapping) else [(None, v)])
    }
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(cell(v))}</td></tr>"
        for k, v in flat.items()
    )
    return f"<table>{body}</table>"
