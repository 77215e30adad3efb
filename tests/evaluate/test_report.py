"""Report helpers draw from the summary; they must not crash on real shapes of runs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from tbrl_lib.evaluate import report
from tbrl_lib.evaluate.results import (
    FailureMode,
    RunConfig,
    RunResults,
    TrialResult,
    summarize,
)


def make_run(outcomes, policy="oracle"):
    run = RunResults(config=RunConfig(policy=policy, tasks_source="x", attempts=2))
    for (task, attempt), ok in outcomes.items():
        run.add(
            TrialResult(
                task_id=task,
                attempt=attempt,
                resolved=ok,
                score=float(ok),
                failure_mode=FailureMode.resolved if ok else FailureMode.agent_timeout,
                difficulty="easy" if task < "m" else "hard",
                category="files",
                turns=3 if ok else 9,
                tokens_in=100,
                tokens_out=40,
            )
        )
    run.summary = summarize(run.trials, run.config)
    return run


RUN = make_run({("a", 0): True, ("a", 1): False, ("z", 0): False, ("z", 1): False})


def test_breakdown_frame_matches_summary():
    frame = report.breakdown_frame(RUN, "difficulty")
    rows = dict(zip(frame["difficulty"], frame["accuracy"]))
    assert rows == {"easy": 0.5, "hard": 0.0}


def test_trials_frame_has_one_row_per_trial():
    frame = report.trials_frame(RUN)
    assert len(frame) == 4
    assert set(frame["failure_mode"]) == {"resolved", "agent_timeout"}


def test_plots_draw(tmp_path):
    other = make_run({("a", 0): True, ("a", 1): True, ("z", 0): True, ("z", 1): False})
    figures = [
        report.plot_breakdown(RUN, "difficulty"),
        report.plot_breakdown(RUN, "category"),
        report.plot_failure_modes(RUN),
        report.plot_distributions(RUN),
        report.plot_comparison(other, RUN),
    ]
    for i, fig in enumerate(figures):
        fig.savefig(tmp_path / f"{i}.png")
        assert (tmp_path / f"{i}.png").stat().st_size > 1000


def test_compare_runs_accepts_objects():
    other = make_run({("a", 0): True, ("a", 1): True, ("z", 0): True, ("z", 1): False})
    cmp = report.compare_runs(other, RUN)
    # per-task rates: other a=1, z=.5 ; RUN a=.5, z=0 -> differences .5, .5
    assert cmp.difference == 0.5 and cmp.a_better == 2


def test_trials_link_to_their_rendered_trajectories(tmp_path):
    from tbrl_lib.agent.trajectory import Termination, ToolCall, Trajectory, Turn

    run = make_run({("a", 0): True, ("z", 0): False})
    traj = Trajectory(
        task_id="a",
        policy="oracle",
        messages=[],
        termination=Termination.finished,
        turns=[
            Turn(
                index=1,
                assistant="<bash>\ncmd: echo hi\n</bash>",
                calls=[ToolCall(kind="bash", output="hi from the sandbox")],
            )
        ],
    )
    Trajectory.save_jsonl(traj, tmp_path / "trajectories" / "a.0.jsonl")
    run.trials[0].trajectory = "trajectories/a.0.jsonl"  # z has none (e.g. an infra error)
    pages = report.write_trajectory_pages(run, tmp_path)
    assert pages == {("a", 0): "trajectories/a.0.html"}
    page = (tmp_path / "trajectories" / "a.0.html").read_text()
    assert "hi from the sandbox" in page and "failure mode" in page  # turns and the outcome
    table = report.trials_html(run, pages)
    assert "<a href='trajectories/a.0.html'>a</a>" in table
    assert table.count("<tr>") == 3  # header + one row per trial, z without a link


def test_headline_leads_with_accuracy_and_its_interval(capsys):
    previous = make_run({("a", 0): False, ("a", 1): False, ("z", 0): False, ("z", 1): False})
    lines = report.headline_lines(RUN, report.compare_runs(RUN, previous))
    assert "<b>oracle</b> on 2 tasks" in lines[0] and "4 trials" in lines[0]
    assert "25.0%" in lines[1] and "Wilson 95%" in lines[1]
    assert "pass@1" in lines[2] and "infra errors 0 of 4" in lines[2]
    assert "+25.0 pts" in lines[3] and "paired over 2 tasks" in lines[3]
    text = report.table_text(report.summary_table(RUN))
    assert "accuracy" in text and "\x1b[" not in text and capsys.readouterr().out == ""
