"""An ipywidgets trajectory viewer: step through the turns of a `Trajectory` - thinking,
actions, observations, timings and token counts.

`TrajectoryViewer(traj).widget` is the notebook widget (slider + previous/next buttons);
it needs a live kernel (`viewers/live.py` shows it only where a frontend draws it). `turn_html(traj, i)` is the HTML of one turn, usable without widgets:
the static page of `tbrl_lib.viewers.trajectory_html` (what reports link to) is built from it.
Left out: editing or labelling turns (the judge-evaluation notebook owns labels).
"""

from __future__ import annotations

import html

import yaml

from tbrl_lib.agent.parser import visible_text
from tbrl_lib.agent.trajectory import Trajectory

_PRE = "white-space:pre-wrap;font-family:monospace;font-size:12px;margin:2px 0;padding:6px;border-radius:4px;"
_STYLE = {
    "thinking": "background:#f4f1fa;color:#555;",
    "action": "background:#eef6ee;",
    "observation": "background:#f3f3f3;",
    "error": "background:#fdeeee;",
}
_MAX_SHOWN = 6000


def _block(title: str, text: str, kind: str) -> str:
    shown = (
        text
        if len(text) <= _MAX_SHOWN
        else text[:_MAX_SHOWN] + f"\n[... {len(text) - _MAX_SHOWN:,} more characters]"
    )
    return f"<div><b>{html.escape(title)}</b><div style='{_PRE}{_STYLE[kind]}'>{html.escape(shown)}</div></div>"


def header_html(traj: Trajectory) -> str:
    reason = traj.termination.value if traj.termination else "running"
    tokens = f", {traj.total_tokens:,} tokens" if traj.total_tokens else ""
    return (
        f"<div><b>{html.escape(traj.task_id)}</b> &middot; policy {html.escape(traj.policy)} &middot; "
        f"{len(traj.turns)} turns &middot; ended: <b>{reason}</b> ({html.escape(traj.termination_message)}) "
        f"&middot; {traj.wall_seconds:.1f}s{tokens}</div>"
    )


def turn_html(traj: Trajectory, index: int) -> str:
    """One turn (0-based `index`) as HTML."""
    turn = traj.turns[index]
    finish = f" &middot; finish: {html.escape(turn.finish_reason)}" if turn.finish_reason else ""
    parts = [
        (
            f"<div><b>Turn {turn.index}</b> &middot; policy {turn.policy_seconds:.2f}s &middot; tools "
            f"{turn.tools_seconds:.2f}s &middot; prompt {turn.prompt_tokens:,} / reply {turn.completion_tokens:,} "
            f"tokens{finish}</div>"
        )
    ]
    if turn.thinking:
        parts.append(_block("thinking", turn.thinking, "thinking"))
    visible, _ = visible_text(turn.assistant)
    if visible.strip():
        parts.append(_block("reply (outside <think>)", visible.strip(), "action"))
    for call in turn.calls:
        if call.action:
            fields = call.action.get("fields", call.action)
            text = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True).strip()
            parts.append(_block(f"action: {call.kind}", text, "action"))
        kind = "error" if not call.ok else "observation"
        status = "(ok)" if call.ok else "(failed)"
        parts.append(_block(f"{call.kind} - {call.seconds:.2f}s {status}", call.output, kind))
    return "\n".join(parts)


class TrajectoryViewer:
    """`display(TrajectoryViewer(traj).widget)`; `.show(i)` jumps to a turn."""

    def __init__(self, traj: Trajectory) -> None:
        import ipywidgets as widgets  # the notebooks extra: in a live kernel only

        self.traj = traj
        last = max(len(traj.turns) - 1, 0)
        self.slider = widgets.IntSlider(
            value=0, min=0, max=last, description="turn", continuous_update=False
        )
        self.prev = widgets.Button(description="previous", icon="arrow-left")
        self.next = widgets.Button(description="next", icon="arrow-right")
        self.body = widgets.HTML()
        self.prev.on_click(lambda _: self.show(self.slider.value - 1))
        self.next.on_click(lambda _: self.show(self.slider.value + 1))
        self.slider.observe(lambda change: self._render(), names="value")
        self.widget = widgets.VBox(
            [
                widgets.HTML(header_html(traj)),
                widgets.HBox([self.prev, self.slider, self.next]),
                self.body,
            ]
        )
        self._render()

    def show(self, index: int) -> None:
        self.slider.value = min(max(index, self.slider.min), self.slider.max)

    def _render(self) -> None:
        self.body.value = (
            turn_html(self.traj, self.slider.value) if self.traj.turns else "<i>no turns</i>"
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display  # the notebooks extra

        display(self.widget)
