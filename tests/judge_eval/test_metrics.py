"""Metrics: Spearman against hand-computed values (ties, constant input), pass rate, distance."""

from __future__ import annotations

import pandas as pd
import pytest

from tbrl_lib.judge_eval.metrics import (
    average_ranks,
    distance_to_range,
    per_case,
    spearman,
    summarize,
)


def test_average_ranks_share_ties():
    assert average_ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]


@pytest.mark.parametrize(
    "x,y,rho",
    [
        ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], 0.8),  # 1 - 6*4/(5*24)
        (
            [1, 2, 2, 3],
            [1, 2, 3, 4],
            0.9486832980505138,
        ),  # Pearson on ranks [1,2.5,2.5,4] vs [1,2,3,4]
    ],
)
def test_spearman_matches_hand_computed_values(x, y, rho):
    assert spearman(x, y) == pytest.approx(rho)


def test_spearman_is_none_when_undefined():
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1], [2]) is None
    with pytest.raises(ValueError):
        spearman([1, 2], [1])


def test_distance_to_range():
    assert distance_to_range(0.5, 0.4, 0.6) == 0
    assert distance_to_range(0.9, 0.4, 0.6) == pytest.approx(0.3)
    assert distance_to_range(0.1, 0.4, 0.6) == pytest.approx(0.3)


def test_summary_uses_mean_over_attempts_and_counts_missing():
    rows = []
    for attempt, (a, b) in enumerate([(0.9, 0.2), (0.7, 0.4)]):
        rows += [
            dict(
                judge="j",
                case="good",
                attempt=attempt,
                score=a,
                lo=0.8,
                hi=1.0,
                cost_usd=0.01,
                latency_s=1.0,
            ),
            dict(
                judge="j",
                case="bad",
                attempt=attempt,
                score=b,
                lo=0.0,
                hi=0.3,
                cost_usd=0.01,
                latency_s=1.0,
            ),
        ]
    rows.append(
        dict(
            judge="j",
            case="bad",
            attempt=2,
            score=None,
            lo=0.0,
            hi=0.3,
            cost_usd=0.0,
            latency_s=2.0,
        )
    )
    frame = pd.DataFrame(rows)
    cases = per_case(frame).set_index("case")
    assert cases.loc["good", "mean_score"] == pytest.approx(0.8) and cases.loc["good", "in_range"]
    assert cases.loc["bad", "mean_score"] == pytest.approx(0.3) and cases.loc["bad", "in_range"]
    assert cases.loc["good", "spread"] == pytest.approx(0.1414, abs=1e-3)
    row = summarize(frame).iloc[0]
    assert row["pass_rate"] == 1.0 and row["spearman"] == pytest.approx(1.0)
    assert row["missing_rate"] == pytest.approx(0.2) and row["cost_usd"] == pytest.approx(0.04)
