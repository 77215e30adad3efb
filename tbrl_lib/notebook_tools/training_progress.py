"""Live training progress in JupyterLab: a panel that follows a run folder's `metrics.jsonl`.

    with follow_training(run, config.grpo.max_steps):
        summary = train(config, out_dir=run, resume=resume)

A background thread reads the rows `MetricsWriter` appends (one per optimizer step) and
updates an ipywidgets panel in place: step / total with a bar, the reward and its parts, the
solved share, the latest held-out solve rate, zero-std groups, refills, infra errors,
seconds per step and the ETA, and a small plot of the reward per step. Each row goes through
`tbrl_lib.step_progress`, as the console line of the same step does, so the panel and the
printed lines show the same numbers. The panel depends on the run folder alone: training in
this kernel, in a subprocess or on a Slurm allocation's nodes is followed alike.

Only where a frontend draws widgets (`tbrl_lib.frontend.frontend_renders_widgets`): under
papermill nothing extra is shown, the console lines stay, and the saved notebook holds no
widget a static report could not draw.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tbrl_lib.frontend import frontend_renders_widgets
from tbrl_lib.step_progress import StepProgress, duration

POLL_SECONDS = 1.0
"""How often the panel's thread looks for new rows."""


class MetricsTail:
    """The rows of a `metrics.jsonl` that is still being written. `read()` adds the complete
    lines appended since the last call to `rows` and says whether anything changed; a file
    rewritten shorter (a resumed run keeps the rows up to its checkpoint) is read again from
    its start; a line still being written waits for its newline."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.rows: list[dict[str, Any]] = []

    def read(self) -> bool:
        try:
            with self.path.open("rb") as fh:
                size = fh.seek(0, io.SEEK_END)
                restarted = size < self.offset
                if restarted:
                    self.offset, self.rows = 0, []
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return False
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                self.rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a blank or foreign line: not a step
        return bool(complete) or restarted


class TrainingPanel:
    """The widget: `update(rows)` with every row so far redraws it in place."""

    def __init__(self, total_steps: int) -> None:
        import ipywidgets as widgets  # the notebooks extra: in a live kernel only

        self.total = total_steps
        self.title = widgets.HTML(self._title("waiting for the first GRPO step"))
        self.bar = widgets.IntProgress(value=0, min=0, max=max(total_steps, 1))
        self.numbers = widgets.HTML()
        self.plot = widgets.Image(format="png", width=360)
        self.widget = widgets.VBox([self.title, self.bar, widgets.HBox([self.numbers, self.plot])])
        self.widget.add_class("tbrl-training-progress")
        self.steps: list[StepProgress] = []

    def _title(self, text: str) -> str:
        return f"<b>GRPO training</b> &middot; <span class='tbrl-progress-status'>{text}</span>"

    def update(self, rows: list[dict[str, Any]]) -> None:
        """Show the newest step of `rows` (every row so far: the plot draws them all)."""
        self.steps = [StepProgress.from_row(row, self.total) for row in rows]
        if not self.steps:
            return
        last = self.steps[-1]
        eta = f" &middot; ETA {duration(last.eta_seconds)}" if last.eta_seconds is not None else ""
        self.title.value = self._title(f"step {last.step}/{self.total}{eta}")
        self.bar.value = min(last.step, self.bar.max)
        self.numbers.value = numbers_html(self.steps)
        self.plot.value = reward_plot_png(self.steps)

    def finish(self, error: BaseException | None) -> None:
        last = f"step {self.steps[-1].step}/{self.total}" if self.steps else "no GRPO step"
        end = f"stopped: {type(error).__name__}" if error else "finished"
        self.title.value = self._title(f"{last} &middot; {end}")


def numbers_html(steps: list[StepProgress]) -> str:
    """The newest step's numbers as a small table (the latest held-out rate from any step)."""
    last = steps[-1]
    rows = [("reward", last.reward), *last.parts.items(), ("solved share", last.solved)]
    heldout = [s for s in steps if s.heldout is not None]
    if heldout:
        rows.append((f"held-out solve rate (step {heldout[-1].step})", heldout[-1].heldout))
    rows += [("zero-std groups", last.zero_std), ("refilled groups", last.refills)]
    if last.infra_errors:
        rows.append(("infra errors", last.infra_errors))
    if last.seconds_per_step is not None:
        rows.append(("seconds per step", last.seconds_per_step))
    cells = "".join(
        f"<tr><td>{name}</td><td class='tbrl-progress-{name.split(' (')[0].replace(' ', '-')}'"
        f" style='text-align:right;padding-left:1em'>{value:.2f}</td></tr>"
        for name, value in rows
        if value is not None
    )
    return f"<table>{cells}</table>"


def reward_plot_png(steps: list[StepProgress]) -> bytes:
    """The reward and its parts per step, as a small PNG (a `Figure` of its own, no pyplot
    state, so the panel's thread can draw it)."""
    from matplotlib.figure import Figure  # the notebooks extra
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(3.6, 2.2), dpi=100)
    axes = figure.add_subplot()
    x = [s.step for s in steps]
    axes.plot(x, [s.reward for s in steps], marker="o", label="reward")
    for name in steps[-1].parts:
        axes.plot(x, [s.parts.get(name) for s in steps], linestyle="--", label=name)
    axes.set(xlabel="step", ylim=(-0.02, 1.02))
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


@contextmanager
def follow_training(
    run_dir: str | Path, total_steps: int, show: bool | None = None
) -> Iterator[TrainingPanel | None]:
    """Show a live panel of the run in `run_dir` while the block runs (a frontend that
    renders widgets only, unless `show` says otherwise); yields the panel, or None."""
    if not (frontend_renders_widgets() if show is None else show):
        yield None
        return
    from IPython.display import display  # the notebooks extra

    panel = TrainingPanel(total_steps)
    tail = MetricsTail(Path(run_dir) / "metrics.jsonl")
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            if tail.read():
                panel.update(tail.rows)
            stop.wait(POLL_SECONDS)

    display(panel.widget)
    thread = threading.Thread(target=poll, name="tbrl-training-progress", daemon=True)
    thread.start()
    error: BaseException | None = None
    try:
        yield panel
    except BaseException as exc:
        error = exc
        raise
    finally:
        stop.set()
        thread.join(timeout=10)
        tail.read()
        panel.update(tail.rows)
        panel.finish(error)
