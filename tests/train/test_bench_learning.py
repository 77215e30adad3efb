"""benchmarks/bench_learning.py without training: a row from a run summary, the table, and
the issue's goals judged per seed (the measured numbers are in docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import json

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location(
    "bench_learning", REPO / "benchmarks" / "bench_learning.py"
)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def summary(first: float, last: float, sft: float, grpo: float) -> dict:
    def heldout(model: str, rate: float) -> dict:
        return {"model": model, "solve_rate": rate, "interval (Wilson 95%)": "[0.1, 0.9]"}

    return {
        "reward_trend": {
            "reward_first3": first,
            "reward_last3": last,
            "rise": last - first,
            "zero_std_share": 0.1,
        },
        "dynamic_sampling": {"refilled_groups": 3.0},
        "heldout": [heldout("base", 0.0), heldout("warm start", sft), heldout("grpo", grpo)],
        "wall_seconds": 480.0,
    }


def test_goals_are_met_only_when_every_seed_meets_them(capsys):
    good = [
        bench.seed_row(0, summary(0.2, 0.5, 0.3, 0.6)),
        bench.seed_row(1, summary(0.1, 0.4, 0.2, 0.2)),
    ]
    assert all(bench.report(good, "cpu-demo").values())
    printed = capsys.readouterr().out
    assert "+0.300" in printed and "0.60 [0.1, 0.9]" in printed and "MISSED" not in printed

    flat = bench.seed_row(2, summary(0.3, 0.4, 0.5, 0.4))  # rose 0.1; held-out fell
    goals = bench.report([*good, flat], "cpu-demo")
    assert not goals["rise >= 0.15 on every seed"] and not goals["held-out sft+grpo >= sft"]
    assert goals["zero-std share < 0.5"]
    assert capsys.readouterr().out.count("MISSED") == 2


def test_a_finished_seed_is_read_back_with_reuse(tmp_path):
    saved = summary(0.2, 0.5, 0.3, 0.6)
    (tmp_path / "seed-4").mkdir()
    (tmp_path / "seed-4" / "summary.json").write_text(json.dumps(saved))
    assert bench.run_seed(4, "cpu-demo", {}, tmp_path, reuse=True) == saved


def family_rows(gains: dict[str, tuple[float, float]]) -> list[dict]:
    """heldout_by_family rows: per family, warm start then grpo with (difference, ci low)."""
    rows = []
    for family, (difference, low) in gains.items():
        rows.append(
            {
                "family": family,
                "model": "warm start",
                "instances": 8,
                "solve_rate": 0.25,
                "solve_rate_ci": [0.07, 0.59],
            }
        )
        rows.append(
            {
                "family": family,
                "model": "grpo",
                "instances": 8,
                "solve_rate": 0.25 + difference,
                "solve_rate_ci": [0.1, 0.95],
                "difference": difference,
                "difference_ci": [low, difference + 0.2],
                "vs_previous": f"{difference:+.2f} [{low:+.2f}, {difference + 0.2:+.2f}]",
            }
        )
    return rows


def test_the_family_goals_need_the_pooled_gain_and_two_families_on_every_seed(capsys):
    learned = summary(0.2, 0.5, 0.3, 0.6) | {
        "heldout_by_family": family_rows(
            {"a": (0.5, 0.1), "b": (0.375, 0.05), "c": (0.0, -0.2), "all": (0.29, 0.12)}
        ),
        "phase_seconds": {"grpo": 600.0, "total": 1500.0},
        "wall_seconds": 1500.0,
        "memory": {"plan_gib": 2.5, "peak_rss_gib": 3.9},
    }
    one_family = learned | {
        "heldout_by_family": family_rows(
            {"a": (0.5, 0.1), "b": (0.25, -0.05), "c": (0.0, -0.2), "all": (0.25, 0.04)}
        )
    }
    slow = learned | {"wall_seconds": 1900.0}
    goals = bench.report([bench.seed_row(0, learned), bench.seed_row(1, learned)], "p")
    family_goals = [g for g in goals if "families" in g or "pooled" in g or "train()" in g]
    assert len(family_goals) == 3 and all(goals[g] for g in family_goals)
    printed = capsys.readouterr().out
    assert "+0.50 [+0.10, +0.70]" in printed and "3.90" in printed and "600" in printed

    goals = bench.report([bench.seed_row(0, learned), bench.seed_row(1, one_family)], "p")
    assert [goals[g] for g in family_goals] == [True, False, True]
    goals = bench.report([bench.seed_row(0, slow)], "p")
    assert [goals[g] for g in family_goals] == [True, True, False]


def test_each_seed_shows_its_memory_per_phase_and_its_growth(capsys):
    memory = {
        "phases": {
            "grpo": {"planned_gib": 2.0, "peak_gib": 1.8, "reached_plan_gib": 1.9},
            "base evaluation": {"planned_gib": 1.9, "peak_gib": 1.4},
        },
        "steps": [2.1, 1.8, 1.9, 1.7],
        "steps_reached_plan": [2.0, 1.9, 1.95, 1.75],
        "steps_resident": [1.2, 1.1, 1.1, 1.15],
    }
    bench.report([bench.seed_row(3, summary(0.2, 0.5, 0.3, 0.6) | {"memory": memory})], "x")
    printed = capsys.readouterr().out
    assert "seed 3: memory per phase" in printed and "plan at reached batches GiB" in printed
    assert (
        "peak step 2 1.80 -> last 1.70; plan at its batches step 2 1.90 -> last 1.75; "
        "resident after step 2 1.10 -> last 1.15"
    ) in printed
