"""The live training panel: it follows a run folder's metrics.jsonl while it is written, shows
the numbers the console line of the same step prints, and shows nothing where no frontend
draws widgets (papermill, a terminal). Seen updating in a real browser: tests/browser."""

from __future__ import annotations

import json
import re
import time
from types import SimpleNamespace

import nbformat
import papermill
import pytest

from tbrl_lib.frontend import frontend_renders_widgets
from tbrl_lib.notebook_tools import training_progress
from tbrl_lib.notebook_tools.training_progress import MetricsTail, TrainingPanel, follow_training
from tbrl_lib.step_progress import SECONDS_PER_STEP, StepProgress


def row(step: int, reward: float, **extra) -> dict:
    """A metrics.jsonl row as MetricsWriter writes it."""
    return {
        "step": step,
        "reward/total": reward,
        "reward/tests": reward + 0.1,
        "reward/judge": reward - 0.1,
        "reward/judge_missing_rate": 0.0,
        "reward/solved_rate": 0.5,
        "sampling/refilled_groups": 1.0,
        "train/reward": reward,
        "train/frac_reward_zero_std": 0.25,
        SECONDS_PER_STEP: 12.0,
        **extra,
    }


def append(path, *rows, end="\n") -> None:
    with path.open("a") as fh:
        fh.write("\n".join(json.dumps(r) for r in rows) + end)


def test_the_tail_reads_complete_lines_and_starts_over_on_a_rewrite(tmp_path):
    path = tmp_path / "metrics.jsonl"
    tail = MetricsTail(path)
    assert not tail.read() and tail.rows == []  # the run has not written it yet
    append(path, row(1, 0.1))
    path.open("a").write('{"step": 2, "train/rew')  # a line still being written
    assert tail.read() and [r["step"] for r in tail.rows] == [1]
    path.open("a").write('ard": 0.2}\n')
    assert tail.read() and [r["step"] for r in tail.rows] == [1, 2]
    assert not tail.read()
    path.write_text(json.dumps(row(1, 0.3)) + "\n")  # a resumed run keeps rows to step 1
    assert tail.read() and [r["train/reward"] for r in tail.rows] == [0.3]


def test_the_panel_shows_the_numbers_of_the_console_line():
    panel = TrainingPanel(total_steps=4)
    rows = [row(1, 0.25), row(2, 0.5, **{"eval/solve_rate": 0.75})]
    panel.update(rows)
    shown = dict(re.findall(r"<td>([^<]+)</td><td[^>]*>([^<]+)</td>", panel.numbers.value))
    line = StepProgress.from_row(rows[-1], 4).line()
    assert line.startswith("grpo step 2/4  reward 0.50 (tests 0.60, judge 0.40)  solved 0.50")
    for name, value in [("reward", "0.50"), ("tests", "0.60"), ("judge", "0.40")]:
        assert shown[name] == value and f"{name} {value}" in line
    assert shown["solved share"] == "0.50" and shown["held-out solve rate (step 2)"] == "0.75"
    assert "step 2/4" in panel.title.value and "ETA 24s" in panel.title.value and "ETA 24s" in line
    assert panel.bar.value == 2 and bytes(panel.plot.value).startswith(b"\x89PNG")


def test_following_a_run_updates_the_panel_while_the_block_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(training_progress, "POLL_SECONDS", 0.05)
    path = tmp_path / "metrics.jsonl"
    seen = []
    with follow_training(tmp_path, 3, show=True) as panel:
        for step in (1, 2):
            append(path, row(step, 0.1 * step))
            deadline = time.monotonic() + 5
            while panel.bar.value < step and time.monotonic() < deadline:
                time.sleep(0.02)
            seen.append(panel.bar.value)
        append(path, row(3, 0.3))  # written as the block ends: read before the panel closes
    assert seen == [1, 2] and panel.bar.value == 3
    assert "step 3/3 &middot; finished" in panel.title.value
    with pytest.raises(KeyboardInterrupt):
        with follow_training(tmp_path, 3, show=True) as stopped:
            raise KeyboardInterrupt
    assert "step 3/3 &middot; stopped: KeyboardInterrupt" in stopped.title.value


def test_no_frontend_no_panel(tmp_path, monkeypatch):
    assert not frontend_renders_widgets()  # pytest: no kernel at all
    with follow_training(tmp_path, 3) as panel:
        assert panel is None
    # the rule: a kernel whose request allows stdin (JupyterLab, Notebook, VS Code)
    for allow, expected in ((True, True), (False, False)):
        request = {"header": {"msg_type": "execute_request"}, "content": {"allow_stdin": allow}}
        kernel = SimpleNamespace(get_parent=lambda channel, r=request: r)
        monkeypatch.setattr("IPython.get_ipython", lambda k=kernel: SimpleNamespace(kernel=k))
        assert frontend_renders_widgets() is expected


@pytest.mark.slow
def test_papermill_is_no_frontend(tmp_path):
    """nbclient (papermill, `tbrl demo`) runs cells in a real kernel without stdin."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from tbrl_lib.frontend import frontend_renders_widgets\n"
            "print('frontend', frontend_renders_widgets())"
        )
    ]
    nbformat.write(notebook, tmp_path / "probe.ipynb")
    done = papermill.execute_notebook(
        str(tmp_path / "probe.ipynb"),
        str(tmp_path / "out.ipynb"),
        kernel_name="python3",
        progress_bar=False,
    )
    assert done.cells[0].outputs[0]["text"] == "frontend False\n"
