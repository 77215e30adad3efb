"""Reward combination: weights, missing judge handled as configured, never NaN, TRL shape."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from tbrl_lib.rewards import RewardBreakdown, RewardConfig, combine, reward_function


def test_default_weights_combine_tests_and_judge():
    r = combine(1.0, 0.5)
    assert r.total == pytest.approx(0.65 + 0.35 * 0.5)
    assert (r.w_tests, r.w_judge, r.infra_error) == (0.65, 0.35, False)
    assert r.metrics()["reward/judge"] == 0.5


def test_unnormalised_weights_are_normalised():
    assert combine(1.0, 0.0, RewardConfig(w_tests=2, w_judge=2)).total == pytest.approx(0.5)


def test_missing_judge_renormalises_to_tests_only():
    r = combine(0.4, None, judge_missing_reason="all judges overloaded")
    assert r.total == pytest.approx(0.4) and r.judge is None and not r.infra_error
    assert r.judge_missing_reason == "all judges overloaded" and "renormalised" in r.notes[0]
    assert r.metrics()["reward/judge_missing"] == 1.0


def test_missing_judge_can_flag_infra_error():
    r = combine(
        0.4, None, RewardConfig(on_judge_missing="infra_error"), judge_missing_reason="down"
    )
    assert r.infra_error and r.total == pytest.approx(0.4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_scores_are_rejected(bad):
    with pytest.raises(ValueError, match="finite"):
        combine(bad, 0.5)
    with pytest.raises(ValueError, match="finite"):
        combine(0.5, bad)


def test_config_validation_says_how_to_fix():
    with pytest.raises(ValidationError, match="w_tests"):
        RewardConfig(w_tests=0, w_judge=0)
    with pytest.raises(ValidationError):
        RewardConfig(on_judge_missing="zero")


def test_trl_reward_function_masks_infra_errors():
    fn = reward_function()
    breakdowns = [
        combine(1.0, 1.0),
        combine(0.0, None, RewardConfig(on_judge_missing="infra_error")),
        combine(0.5, None).to_dict(),
    ]
    out = fn(["a", "b", "c"], reward_breakdowns=breakdowns)
    assert out[0] == pytest.approx(1.0) and out[1] is None and out[2] == pytest.approx(0.5)
    assert not any(isinstance(v, float) and math.isnan(v) for v in out)
    assert reward_function("tests")(["a"], reward_breakdowns=[combine(0.3, 0.9)]) == [0.3]
    with pytest.raises(ValueError, match="one RewardBreakdown per completion"):
        fn(["a", "b"], reward_breakdowns=breakdowns[:1])
    assert isinstance(breakdowns[0], RewardBreakdown)
