"""pass@k, intervals and paired comparisons against values computed by hand."""

from __future__ import annotations

import math

import pytest

from tbrl_lib.evaluate import stats


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (5, 2, 2, 0.7),
        # k = 1 is the plain success rate: 2/5
        (5, 2, 1, 0.4),
        # 1 - C(7,5)/C(10,5) = 1 - 21/252 = 11/12
        (10, 3, 5, 11 / 12),
        # no success: 0 whatever k
        (5, 0, 3, 0.0),
        # n - c = 1 < k = 2: every draw of 2 contains a success
        (5, 4, 2, 1.0),
        # k = n: 1 as soon as one attempt succeeded
        (4, 1, 4, 1.0),
    ],
)
def test_pass_at_k_matches_hand_values(n, c, k, expected):
    assert stats.pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_equals_binomial_formula_for_large_n():
    # The product form must agree with 1 - C(n-c,k)/C(n,k) where the binomials are exact.
    n, c, k = 100, 7, 10
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert stats.pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError, match="pass_at_k needs"):
        stats.pass_at_k(n, c, k)


def test_mean_pass_at_k_averages_tasks():
    # task a: n=2, c=1 -> pass@1 = 0.5 ; task b: n=2, c=0 -> 0 ; mean 0.25
    # pass@2: a -> 1 - C(1,2)/C(2,2) = 1 ; b -> 0 ; mean 0.5
    counts = [(2, 1), (2, 0)]
    assert stats.mean_pass_at_k(counts, 1) == pytest.approx(0.25)
    assert stats.mean_pass_at_k(counts, 2) == pytest.approx(0.5)


def test_wilson_interval_seven_of_ten():
    # z = 1.959964, p = 0.7, n = 10:
    # denom  = 1 + z^2/n                    = 1.384146
    # center = (p + z^2/(2n)) / denom        = 0.892073 / 1.384146 = 0.644493
    # margin = z*sqrt(p(1-p)/n + z^2/(4n^2)) / denom
    #        = 1.959964 * sqrt(0.021 + 0.0096037) / 1.384146 = 0.247715
    # -> (0.396778, 0.892208)
    low, high = stats.wilson_interval(7, 10)
    assert low == pytest.approx(0.396778, abs=1e-5)
    assert high == pytest.approx(0.892208, abs=1e-5)


def test_wilson_interval_at_the_edges_stays_inside_unit_interval():
    # 0 of 5: center = (z^2/10)/(1+z^2/5) = 0.384146/1.768293 = 0.217241 = margin -> (0, 0.434482)
    low, high = stats.wilson_interval(0, 5)
    assert low == pytest.approx(0.0, abs=1e-12)
    assert high == pytest.approx(0.434482, abs=1e-5)
    low, high = stats.wilson_interval(5, 5)
    assert high == pytest.approx(1.0, abs=1e-12)
    assert low == pytest.approx(1 - 0.434482, abs=1e-5)


def test_wilson_interval_rejects_bad_input():
    with pytest.raises(ValueError, match="n >= 1"):
        stats.wilson_interval(0, 0)
    with pytest.raises(ValueError, match="successes"):
        stats.wilson_interval(6, 5)
    with pytest.raises(ValueError, match="confidence"):
        stats.wilson_interval(1, 5, confidence=1.5)


def test_bootstrap_interval_matches_exact_resampling_distribution():
    # values {0,0,0,1}: a resample's mean is Bin(4, 1/4)/4 with probabilities
    # 81, 108, 54, 12, 1 (/256) for means 0, .25, .5, .75, 1; cumulative
    # 0.316, 0.738, 0.949, 0.996, 1. The 2.5% quantile is 0, the 97.5% quantile 0.75
    # (0.949 < 0.975 < 0.996), both far from a boundary, so 10,000 resamples find them.
    assert stats.bootstrap_mean_interval([0, 0, 0, 1]) == (0.0, 0.75)


def test_bootstrap_interval_is_degenerate_for_constant_values_and_seeded():
    assert stats.bootstrap_mean_interval([1.0] * 7) == (1.0, 1.0)
    values = [0, 1, 1, 0.5, 0, 1, 1, 0]
    assert stats.bootstrap_mean_interval(values) == stats.bootstrap_mean_interval(values)
    with pytest.raises(ValueError, match="at least one"):
        stats.bootstrap_mean_interval([])


def test_sign_test_p_value():
    # 8 wins, 2 losses: P(X <= 2 | Bin(10, 1/2)) = (1 + 10 + 45)/1024 = 0.0546875, two-sided x2
    assert stats.sign_test_p(8, 2) == pytest.approx(0.109375)
    assert stats.sign_test_p(2, 8) == pytest.approx(0.109375)
    # 3 vs 3: the tail P(X <= 3 | Bin(6,1/2)) = 42/64 > 1/2, capped at 1
    assert stats.sign_test_p(3, 3) == 1.0
    assert stats.sign_test_p(0, 0) == 1.0


def test_paired_comparison_on_shared_tasks():
    a = {"t1": 1.0, "t2": 1.0, "t3": 0.0, "t4": 1.0}
    b = {"t1": 0.0, "t2": 1.0, "t3": 0.0, "t4": 0.0, "t5": 1.0}
    cmp = stats.paired_comparison(a, b)
    # shared t1..t4; differences [1, 0, 0, 1] -> mean 0.5; A 0.75, B 0.25
    assert cmp.n_tasks == 4
    assert cmp.accuracy_a == pytest.approx(0.75)
    assert cmp.accuracy_b == pytest.approx(0.25)
    assert cmp.difference == pytest.approx(0.5)
    # resampled mean of {1,0,0,1} is Bin(4, 1/2)/4: P(0) = P(1) = 1/16 = 0.0625 > 0.025,
    # so the percentile interval is [0, 1]
    assert (cmp.ci_low, cmp.ci_high) == (0.0, 1.0)
    assert (cmp.a_better, cmp.b_better, cmp.ties) == (2, 0, 2)
    # 2 wins, 0 losses: 2 * (1/4) = 0.5
    assert cmp.sign_test_p == pytest.approx(0.5)
    assert cmp.only_in_a == [] and cmp.only_in_b == ["t5"]


def test_paired_comparison_needs_shared_tasks():
    with pytest.raises(ValueError, match="share no task ids"):
        stats.paired_comparison({"a": 1.0}, {"b": 1.0})


def test_breakdown_groups_and_keeps_unknown():
    rates = {"t1": 1.0, "t2": 0.0, "t3": 0.5, "t4": 1.0}
    groups = {"t1": "easy", "t2": "easy", "t3": "hard"}
    out = stats.breakdown(rates, groups)
    assert out["easy"] == {"n_tasks": 2, "accuracy": 0.5, "resolved_tasks": 1.0}
    assert out["hard"] == {"n_tasks": 1, "accuracy": 0.5, "resolved_tasks": 0.5}
    assert out["unknown"]["n_tasks"] == 1
