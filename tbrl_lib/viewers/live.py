"""The trajectory viewer where a person can use it: `live_viewer(traj)` in notebooks 02 and 05.

In a frontend that renders widgets (JupyterLab; `tbrl_lib.frontend`)
it returns a `TrajectoryViewer` (slider over the turns) or, given several trajectories, a
`TrajectoryPicker` (a dropdown, then the viewer), which the cell's last line displays; under
papermill, in a terminal or with nothing to show it returns None, and the static pages
(`trajectory_html.py`) stay the report's view.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.frontend import frontend_renders_widgets
from tbrl_lib.viewers.viewer import TrajectoryViewer


class TrajectoryPicker:
    """A viewer over several trajectories: a dropdown picks one (each `.jsonl` is read when
    first picked)."""

    def __init__(self, trajectories: Mapping[str, Trajectory | str | Path]) -> None:
        import ipywidgets as widgets  # the notebooks extra: in a live kernel only

        self.sources = dict(trajectories)
        self.loaded: dict[str, Trajectory] = {}
        self.pick = widgets.Dropdown(options=list(self.sources), description="trajectory")
        self.body = widgets.VBox()
        self.pick.observe(lambda change: self._show(change["new"]), names="value")
        self.widget = widgets.VBox([self.pick, self.body])
        self._show(self.pick.value)

    def _show(self, name: str) -> None:
        if name not in self.loaded:
            source = self.sources[name]
            self.loaded[name] = (
                source if isinstance(source, Trajectory) else Trajectory.load_jsonl(source)[0]
            )
        self.viewer = TrajectoryViewer(self.loaded[name])
        self.body.children = [self.viewer.widget]

    def _ipython_display_(self) -> None:
        from IPython.display import display  # the notebooks extra

        display(self.widget)


def live_viewer(
    trajectories: Trajectory | Mapping[str, Trajectory | str | Path],
) -> TrajectoryViewer | TrajectoryPicker | None:
    """A viewer to step through the turns, when a frontend renders widgets (the value of a
    cell's last line then shows it); None under papermill, in a terminal or with nothing to
    show."""
    if not frontend_renders_widgets() or not trajectories:
        return None
    if isinstance(trajectories, Trajectory):
        return TrajectoryViewer(trajectories)
    return TrajectoryPicker(trajectories)
