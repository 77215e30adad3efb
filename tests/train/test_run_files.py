"""The reward plot: its curves and the held-out points."""

from __future__ import annotations

from tbrl_lib.train.report.run_files import CURVES, heldout_points, plot_rewards


def test_plot_is_written_with_and_without_points(tmp_path):
    assert (
        plot_rewards([{"step": 1, "reward/total": 0.5}], tmp_path / "a.png").stat().st_size > 1000
    )
    assert plot_rewards([], tmp_path / "b.png").is_file()
    records = [{"step": 1, "reward/total": 0.2}, {"step": 2, "eval/solve_rate": 0.75}]
    before = {"base": {"eval/solve_rate": 0.0}, "warm start": {"eval/solve_rate": 0.25}}
    assert plot_rewards(records, tmp_path / "c.png", before).stat().st_size > 1000


def test_reward_components_each_have_their_own_line_style():
    styles = [tuple(sorted(style.items())) for _, _, style in CURVES]
    assert len(set(styles)) == len(CURVES)
    for key in ("color", "linestyle", "marker"):  # tests == solved share must still show both
        assert len({style[key] for _, _, style in CURVES}) == len(CURVES), key


def test_models_evaluated_before_grpo_are_the_curves_step_0_with_intervals():
    records = [
        {
            "step": 1,
            "eval/solve_rate": 0.5,
            "eval/accuracy_ci_low": 0.2,
            "eval/accuracy_ci_high": 0.8,
        },
        {"step": 2},
        {"step": 3, "eval/solve_rate": 1},
    ]
    before = {
        "base": {
            "eval/solve_rate": 0.0,
            "eval/accuracy_ci_low": 0.0,
            "eval/accuracy_ci_high": 0.24,
        },
        "warm start": {"eval/solve_rate": 0.25},
    }
    assert heldout_points(records, before) == [
        (0, 0.0, 0.0, 0.24, "base"),
        (0, 0.25, None, None, "warm start"),
        (1, 0.5, 0.2, 0.8, ""),
        (3, 1, None, None, ""),
    ]
    assert [p.step for p in heldout_points(records)] == [1, 3]  # a resumed run: none before
