"""Tables and plots of evaluation runs, for the CLI (rich) and notebook 05 (pandas, matplotlib).

Everything reads a `RunResults` (or its folder); nothing here computes a statistic of
its own (`stats` and `results.summarize` do), so the terminal, the notebook and
results.json always agree.

Each trial's trajectory is rendered as a static page (`write_trajectory_pages`, with
`tbrl_lib.viewers.trajectory_html`) and `trials_html` links every trial row to its page, so
an HTML report read offline shows what the agent did.

Left out: interactive widgets (the live-kernel viewer is `tbrl_lib.viewers.viewer`).
"""

from __future__ import annotations

import html
import io
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from rich.console import Console
from rich.table import Table

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.evaluate import stats
from tbrl_lib.evaluate.results import FailureMode, RunResults, TrialResult
from tbrl_lib.viewers.trajectory_html import write_trajectory_page

if TYPE_CHECKING:  # matplotlib is the notebooks extra: imported where a plot is drawn
    from matplotlib.figure import Figure


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ci(low: float, high: float) -> str:
    return f"[{_pct(low)}, {_pct(high)}]"


def accuracy_text(summary: dict) -> str:
    """`50.0% [23.7%, 76.3%] Wilson 95%`, plus the bootstrap beside it with several attempts;
    `n/a` when no trial was scored."""
    if summary["accuracy"] is None:
        return "n/a (no trial was scored)"
    text = f"{_pct(summary['accuracy'])} {_ci(*summary['accuracy_ci'])} Wilson 95%"
    boot = summary.get("accuracy_ci_bootstrap")
    if boot and boot[1] > boot[0]:
        text += f"; bootstrap over tasks {_ci(*boot)}"
    elif boot:
        text += f"; bootstrap over tasks: zero width (all {summary['n_tasks']} tasks alike)"
    return text


def summary_table(results: RunResults, title: str | None = None) -> Table:
    """The headline numbers of one run."""
    s = results.summary
    table = Table(title=title or f"{results.config.policy} on {results.config.tasks_source}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("tasks x attempts", f"{s['n_tasks']} tasks, {s['n_scored']} scored trials")
    table.add_row("accuracy", accuracy_text(s))
    table.add_row("infra errors (not scored)", _infra_text(s))
    if s.get("task_errors"):
        table.add_row("task errors (not scored)", _task_errors_text(s))
    for k, value in s["pass_at_k"].items():
        table.add_row(f"pass@{k}", _pct(value))
    if s["mean_score"] is not None:
        table.add_row("mean test score", f"{s['mean_score']:.3f}")
    for mode, count in s["failure_modes"].items():
        if count:
            table.add_row(f"failure mode: {mode}", str(count))
    for name in ("by_difficulty", "by_category"):
        for group, row in s[name].items():
            table.add_row(f"{name[3:]}: {group}", f"{_pct(row['accuracy'])} of {row['n_tasks']}")
    if s["turns"]:
        table.add_row("turns (mean / max)", f"{s['turns']['mean']:.1f} / {s['turns']['max']:.0f}")
    table.add_row(
        "tokens in / out (mean)", f"{s['tokens_in']['mean']:.0f} / {s['tokens_out']['mean']:.0f}"
    )
    table.add_row("timeouts", s["timeouts"])
    table.add_row("wall time", f"{results.wall_seconds:.1f} s")
    return table


def headline_lines(results: RunResults, comparison: stats.Comparison | None = None) -> list[str]:
    """Three or four lines (HTML) a report leads with: what ran, the accuracy with its
    interval, pass@k and what was not scored, and the paired difference to an earlier run."""
    s, config = results.summary, results.config
    lines = [
        f"<b>{html.escape(config.policy)}</b> on {s['n_tasks']} tasks from "
        f"{html.escape(str(config.tasks_source))}: {s['n_trials']} trials, "
        f"{results.wall_seconds / 60:.1f} min wall time",
        f"<b>accuracy</b> {html.escape(accuracy_text(s))}",
    ]
    passes = ", ".join(f"pass@{k} {_pct(v)}" for k, v in s["pass_at_k"].items())
    modes = ", ".join(f"{m} {n}" for m, n in s["failure_modes"].items() if n)
    lines.append(
        (f"{passes}; " if passes else "")
        + f"infra errors {_infra_text(s)} (not scored)"
        + (f"; how trials ended: {html.escape(modes)}" if modes else "")
    )
    if comparison is not None:
        lines.append(
            f"<b>vs the earlier run</b> {100 * comparison.difference:+.1f} pts "
            f"[{100 * comparison.ci_low:+.1f}, {100 * comparison.ci_high:+.1f}] "
            f"(paired over {comparison.n_tasks} tasks, 95% bootstrap)"
        )
    return lines


def table_text(table: Table, width: int = 100) -> str:
    """A rich table as plain text, HTML-escaped (for a `<pre>` block of a report)."""
    out = Console(record=True, width=width, file=io.StringIO(), force_jupyter=False)
    out.print(table)
    return html.escape(out.export_text())


def _infra_text(summary: dict) -> str:
    text = f"{summary['infra_errors']} of {summary['n_trials']} trials"
    broken = summary.get("task_error_tasks", {})
    unscored = [t for t in summary["unscored_tasks"] if t not in broken]
    if unscored:
        text += f"; {len(unscored)} task(s) with no scored trial"
    return text


def _task_errors_text(summary: dict) -> str:
    broken = summary["task_error_tasks"]
    return (
        f"{summary['task_errors']} trial(s) of {len(broken)} task(s): {', '.join(sorted(broken))}"
    )


def compare_runs(
    run_a: str | Path | RunResults, run_b: str | Path | RunResults
) -> stats.Comparison:
    """Paired per-task comparison of two runs (A minus B)."""
    a = run_a if isinstance(run_a, RunResults) else RunResults.load(run_a)
    b = run_b if isinstance(run_b, RunResults) else RunResults.load(run_b)
    return stats.paired_comparison(a.task_rates(), b.task_rates())


def comparison_table(cmp: stats.Comparison, name_a: str = "A", name_b: str = "B") -> Table:
    table = Table(title=f"{name_a} vs {name_b} (paired over {cmp.n_tasks} shared tasks)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row(f"accuracy {name_a}", _pct(cmp.accuracy_a))
    table.add_row(f"accuracy {name_b}", _pct(cmp.accuracy_b))
    table.add_row(
        f"difference ({name_a} - {name_b})",
        f"{100 * cmp.difference:+.1f} pts, {int(cmp.confidence * 100)}% CI "
        f"[{100 * cmp.ci_low:+.1f}, {100 * cmp.ci_high:+.1f}]",
    )
    table.add_row(
        f"tasks {name_a} better / {name_b} better / tied",
        f"{cmp.a_better} / {cmp.b_better} / {cmp.ties}",
    )
    table.add_row("sign test p (two-sided)", f"{cmp.sign_test_p:.3g}")
    if cmp.only_in_a or cmp.only_in_b:
        table.add_row(
            "not compared",
            f"{len(cmp.only_in_a)} only in {name_a}, {len(cmp.only_in_b)} only in {name_b}",
        )
    return table


def trials_frame(results: RunResults) -> pd.DataFrame:
    """One row per trial (the notebook's raw table)."""
    return pd.DataFrame([t.model_dump(mode="json") for t in results.trials])


def write_trajectory_pages(results: RunResults, run_dir: str | Path) -> dict[tuple[str, int], str]:
    """Render each trial's saved trajectory next to it as `<name>.html`; return trial key ->
    page path relative to `run_dir` (trials without a trajectory are left out)."""
    run_dir = Path(run_dir)
    pages = {}
    for trial in results.trials:
        source = run_dir / trial.trajectory if trial.trajectory else None
        if source is None or not source.exists():
            continue
        (traj, *_) = Trajectory.load_jsonl(source)
        page = Path(trial.trajectory).with_suffix(".html")
        write_trajectory_page(traj, run_dir / page, _trial_outcome(trial))
        pages[trial.key] = page.as_posix()
    return pages


def trajectory_files(results: RunResults, run_dir: str | Path) -> dict[str, Path]:
    """`task (attempt N)` -> the trial's saved trajectory, for every trial that has one (the
    live viewer's choices in notebook 05)."""
    files = {}
    for trial in results.trials:
        source = Path(run_dir) / trial.trajectory if trial.trajectory else None
        if source is not None and source.exists():
            files[f"{trial.task_id} (attempt {trial.attempt})"] = source
    return files


def _trial_outcome(trial: TrialResult) -> dict:
    return {
        "resolved": trial.resolved,
        "test score": trial.score,
        "failure mode": trial.failure_mode.value,
        "failed tests": trial.failed_tests,
        "termination": trial.termination,
        "error": trial.error,
    }


def trials_html(results: RunResults, pages: dict[tuple[str, int], str]) -> str:
    """One HTML table row per trial, its task linked to its trajectory page (`pages` from
    `write_trajectory_pages`; links are relative to the run folder, where the report is)."""
    head = (
        "task",
        "attempt",
        "resolved",
        "score",
        "failure mode",
        "turns",
        "tokens out",
        "agent s",
        "test s",
    )
    rows = []
    for t in results.trials:
        task = html.escape(t.task_id)
        if t.key in pages:
            task = f"<a href='{html.escape(pages[t.key])}'>{task}</a>"
        cells = (
            task,
            t.attempt,
            "yes" if t.resolved else "no",
            f"{t.score:.2f}",
            t.failure_mode.value,
            t.turns,
            t.tokens_out,
            f"{t.agent_seconds:.1f}",
            f"{t.test_seconds:.1f}",
        )
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
    return f"<table>{header}{''.join(rows)}</table>"


def breakdown_frame(results: RunResults, by: str = "category") -> pd.DataFrame:
    rows = results.summary[f"by_{by}"]
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(by).reset_index()


def plot_breakdown(results: RunResults, by: str = "category") -> Figure:
    """Accuracy per group, with the number of tasks on each bar."""
    import matplotlib.pyplot as plt  # the notebooks extra

    frame = breakdown_frame(results, by)
    fig, ax = plt.subplots(figsize=(max(4, 0.7 * len(frame) + 2), 3))
    bars = ax.bar(frame[by], frame["accuracy"] * 100)
    ax.bar_label(bars, labels=[f"n={n}" for n in frame["n_tasks"]], fontsize=8)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 110)
    ax.set_title(f"accuracy by {by}")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig


def plot_failure_modes(results: RunResults) -> Figure:
    import matplotlib.pyplot as plt  # the notebooks extra

    modes = results.summary["failure_modes"]
    names = [m.value for m in FailureMode]
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.barh(names, [modes.get(n, 0) for n in names])
    ax.set_xlabel("trials")
    ax.set_title("how trials ended")
    fig.tight_layout()
    return fig


def plot_distributions(results: RunResults) -> Figure:
    """Histograms of turns and output tokens per trial, resolved vs not."""
    import matplotlib.pyplot as plt  # the notebooks extra

    frame = trials_frame(results)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3))
    for ax, column in zip(axes, ("turns", "tokens_in", "tokens_out")):
        for resolved, group in frame.groupby("resolved"):
            ax.hist(
                group[column], bins=15, alpha=0.6, label="resolved" if resolved else "not resolved"
            )
        ax.set_title(column)
    axes[0].legend()
    fig.tight_layout()
    return fig


def plot_comparison(
    run_a: RunResults, run_b: RunResults, name_a: str = "A", name_b: str = "B"
) -> Figure:
    """Per-task success rate of A against B; marker size and label = number of tasks there.
    Points above the diagonal are tasks where A does better."""
    import matplotlib.pyplot as plt  # the notebooks extra

    a, b = run_a.task_rates(), run_b.task_rates()
    shared = sorted(set(a) & set(b))
    fig, ax = plt.subplots(figsize=(4, 4))
    points = Counter((b[t], a[t]) for t in shared)  # many tasks share a point at K=1
    xs, ys = zip(*points)
    ax.scatter(xs, ys, s=[40 * n for n in points.values()], alpha=0.6)
    for (x, y), n in points.items():
        ax.annotate(str(n), (x, y), ha="center", va="center", fontsize=8)
    ax.plot([0, 1], [0, 1], color="grey", linewidth=1)
    ax.set_xlim(-0.08, 1.08)
    ax.set_ylim(-0.08, 1.08)
    ax.set_xlabel(f"{name_b}: per-task success")
    ax.set_ylabel(f"{name_a}: per-task success")
    ax.set_title("paired per-task comparison")
    fig.tight_layout()
    return fig
