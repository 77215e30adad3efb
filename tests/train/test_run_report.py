"""Notebook 04's report blocks: the headline, the deciding turn, tables a person reads."""

from __future__ import annotations

import math

from tbrl_lib.agent.trajectory import ToolCall, Trajectory, Turn
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.report import run_report

SUMMARY = {
    "preset": "cpu-demo",
    "model": "tiny:learn",
    "steps": 12,
    "rollouts": 384.0,
    "wall_seconds": 426.0,
    "reward_trend": {"reward_first3": 0.156, "reward_last3": 0.618, "rise": 0.462},
    "heldout": [
        {"model": "base", "solve_rate": 0.1667, "interval (Wilson 95%)": "[0.05, 0.45]"},
        {"model": "warm start", "solve_rate": 0.0833, "vs_previous": "-0.08 [-0.25, +0.08]"},
        {"model": "grpo", "solve_rate": 1.0, "vs_previous": "+0.92 [+0.75, +1.00]"},
    ],
    "stopped_early": None,
}


def test_headline_says_what_ran_and_what_came_of_it():
    lines = run_report.headline_lines(SUMMARY, load_preset("cpu-demo"))
    assert len(lines) == 3
    assert "12 GRPO steps" in lines[0] and "384 rollouts" in lines[0] and "7.1 min" in lines[0]
    assert "0.16 &rarr; 0.62" in lines[1] and "+0.46" in lines[1]
    assert "base 0.17 &rarr; warm start 0.08 &rarr; final 1.00" in lines[2]
    assert "final vs warm start +0.92 [+0.75, +1.00]" in lines[2] and "12 instances" in lines[2]
    three = run_report.headline_lines(SUMMARY, load_preset("cpu-smollm2-learn"))
    assert "36 instances" in three[2]  # 12 held-out instances of each of 3 families, pooled
    stopped = run_report.headline_lines({**SUMMARY, "stopped_early": "every task <skipped>"})
    assert len(stopped) == 4 and "every task &lt;skipped&gt;" in stopped[3]


def test_key_settings_are_a_short_readable_table():
    table = run_report.key_settings(load_preset("cpu-demo"))
    assert 8 <= len(table) <= 16
    text = " ".join(table["value"])
    assert "Difficulty." not in text and "(" in text and "Settings(" not in text
    assert table.loc["rollouts per step", "value"] == "32 (4 groups of 8)"


def _turn(index: int, *kinds: str, ok: bool = True) -> Turn:
    return Turn(
        index=index,
        assistant="...",
        calls=[ToolCall(kind=k, output="", ok=ok) for k in kinds],
    )


def test_the_deciding_turn_is_the_last_that_changed_what_the_tests_see():
    def traj(*turns: Turn) -> Trajectory:
        return Trajectory(task_id="t", policy="p", messages=[], turns=list(turns))

    wrote = traj(_turn(1, "search.ls"), _turn(2, "file.write"), _turn(3, "finish"))
    assert run_report.deciding_turn(wrote) == 1
    failed_write = traj(_turn(1, "bash"), _turn(2, "file.write", ok=False), _turn(3, "finish"))
    assert run_report.deciding_turn(failed_write) == 0
    only_reads = traj(_turn(1, "file.read"), _turn(2))
    assert run_report.deciding_turn(only_reads) == 1  # the reply that ended it
    assert run_report.deciding_turn(traj()) is None


def test_step_table_keeps_a_long_run_within_a_screen():
    records = [
        {"step": s, "train/reward": s / 100, "eval/solve_rate": 0.5 if s == 37 else math.nan}
        for s in range(1, 101)
    ]
    table = run_report.step_table(records, run_report.REWARD_COLUMNS, max_rows=30)
    assert len(table) <= 32 and table.index.name == "step"
    assert {"1", "37", "100"} <= set(table.index)  # first, the evaluation, the last
    assert list(table.columns) == ["reward", "held-out solve rate"]
    assert (
        table.loc["37", "held-out solve rate"] == "0.5"
        and table.loc["1", "held-out solve rate"] == ""
    )


def test_the_family_table_has_a_column_per_model_and_the_bundled_tasks_last():
    def row(family, model, rate, gain=None):
        extra = {"vs_previous": f"{gain:+.2f} [+0.10, +0.90]"} if gain is not None else {}
        return {"family": family, "model": model, "instances": 12, "solve_rate": rate, **extra}

    rows = [
        row(family, model, rate, gain)
        for family in ("write_word", "fix_script", "all")
        for model, rate, gain in (
            ("base", 0.0, None),
            ("warm start", 0.25, 0.25),
            ("grpo", 0.75, 0.5),
        )
    ]
    bundled = [{"model": m, "tasks": 3, "solve_rate": 0.0} for m in ("base", "warm start", "grpo")]
    table = run_report.family_heldout_table({"heldout_by_family": rows, "heldout_bundled": bundled})
    assert list(table.index) == ["write_word", "fix_script", "all", "bundled (easiest tasks)"]
    assert {"base", "warm start", "final"} <= set(table.columns)
    assert table.loc["all", "last vs the one before (paired, 95%)"] == "+0.50 [+0.10, +0.90]"
    assert run_report.family_heldout_table({"heldout_by_family": rows[:3]}).empty  # one family
