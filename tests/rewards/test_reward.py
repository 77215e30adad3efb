"""Reward combination: parts by weight, a missing part handled as configured, never NaN, the
settings old and new, TRL's shape."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from tbrl_lib.agent.trajectory import Trajectory, Turn
from tbrl_lib.rewards import PARTS, RewardBreakdown, RewardConfig, combine, reward_function
from tbrl_lib.rewards.parts import Evidence, Missing
from tbrl_lib.rewards.reward import step_metrics


def test_default_weights_combine_tests_and_judge():
    r = combine({"tests": 1.0, "judge": 0.5})
    assert r.total == pytest.approx(0.65 + 0.35 * 0.5)
    assert (r.weights, r.infra_error) == ({"tests": 0.65, "judge": 0.35}, False)
    assert r.metrics()["reward/judge"] == 0.5 and r.metrics()["reward/judge_missing"] == 0.0


def test_unnormalised_weights_are_normalised():
    config = RewardConfig(weights={"tests": 2, "judge": 2})
    assert combine({"tests": 1.0, "judge": 0.0}, config).total == pytest.approx(0.5)


def test_a_third_part_enters_the_total_by_its_weight():
    config = RewardConfig(weights={"budget": 0.5})
    assert config.weights == {"tests": 0.65, "judge": 0.35, "budget": 0.5}
    r = combine({"tests": 1.0, "judge": 0.0, "budget": 0.0}, config)
    assert r.total == pytest.approx(0.65 / 1.5)
    assert r.metrics()["reward/budget"] == 0.0
    assert config.describe() == "43% tests + 23% judge + 33% budget (rule)"


def test_a_part_of_weight_zero_is_reported_but_never_counted():
    config = RewardConfig(weights={"budget": 0.0})
    r = combine({"tests": 0.3, "judge": 0.9, "budget": 0.0}, config)
    assert r.total == combine({"tests": 0.3, "judge": 0.9}).total
    assert r.scores["budget"] == 0.0 and r.metrics()["reward/budget"] == 0.0


def test_missing_judge_renormalises_to_the_other_parts():
    r = combine({"tests": 0.4, "judge": Missing("all judges overloaded")})
    assert r.total == 0.4 and r.scores["judge"] is None and not r.infra_error
    assert r.missing == {"judge": "all judges overloaded"} and "renormalised" in r.notes[0]
    assert r.metrics()["reward/judge_missing"] == 1.0
    assert r.flagged_by() == ("judge", "all judges overloaded")


def test_missing_judge_can_flag_infra_error():
    config = RewardConfig(on_judge_missing="infra_error")
    r = combine({"tests": 0.4, "judge": Missing("down")}, config)
    assert r.infra_error and r.total == pytest.approx(0.4)


def test_nothing_weighted_to_score_flags_the_rollout():
    """A judge-only reward whose judge failed has nothing to be made of: masked, never the
    (unweighted) tests score."""
    config = RewardConfig(weights={"tests": 0, "judge": 1})
    r = combine({"tests": 1.0, "judge": Missing("down")}, config)
    assert r.infra_error and "no weighted part" in r.notes[-1]


def test_one_weighted_part_is_its_score_exactly():
    """No w * s / w rounding: a tests-only reward is the test score, bit for bit."""
    config = RewardConfig(weights={"tests": 0.65, "judge": 0})
    for score in (0.1, 0.3, 0.7, 1 / 3):
        assert combine({"tests": score, "judge": None}, config).total == score


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_scores_are_rejected(bad):
    with pytest.raises(ValueError, match="finite"):
        combine({"tests": bad, "judge": 0.5})
    with pytest.raises(ValueError, match="finite"):
        combine({"tests": 0.5, "judge": bad})


def test_a_weighted_part_without_an_entry_is_a_bug():
    with pytest.raises(ValueError, match="no score for the reward parts"):
        combine({"tests": 1.0})


def test_config_validation_says_how_to_fix():
    with pytest.raises(ValidationError, match="sum to > 0"):
        RewardConfig(weights={"tests": 0, "judge": 0})
    with pytest.raises(ValidationError, match="not a reward part; the parts are tests, judge"):
        RewardConfig(weights={"length": 0.1})
    with pytest.raises(ValidationError, match=">= 0"):
        RewardConfig(weights={"budget": -1})
    with pytest.raises(ValidationError, match="not both"):
        RewardConfig.model_validate({"w_tests": 1.0, "weights": {"judge": 0}})
    with pytest.raises(ValidationError, match="set weights.judge=0"):
        RewardConfig(judge="none", weights={"judge": 0.35})
    with pytest.raises(ValidationError):
        RewardConfig(on_judge_missing="zero")


def test_the_older_weight_keys_are_still_read():
    old = RewardConfig.model_validate({"w_tests": 1.0, "w_judge": 0.0})
    assert old == RewardConfig(weights={"tests": 1.0, "judge": 0.0}) and not old.judged
    assert RewardConfig(judge="none").weights == {"tests": 0.65, "judge": 0.0}
    assert RewardConfig.model_validate({"w_judge": 0.35}) == RewardConfig()


def test_the_judge_is_called_only_when_weighted_and_named():
    assert RewardConfig().judged
    assert not RewardConfig(weights={"judge": 0}).judged
    assert not RewardConfig(judge="none").judged


def test_a_breakdown_saved_before_the_parts_were_data_still_loads():
    old = {
        "tests": 0.4,
        "judge": None,
        "total": 0.4,
        "w_tests": 0.65,
        "w_judge": 0.35,
        "infra_error": False,
        "judge_missing_reason": "down",
        "notes": ["judge missing (down); reward renormalised to tests only"],
    }
    b = RewardBreakdown.from_dict(old)
    assert b.scores == {"tests": 0.4, "judge": None} and b.missing == {"judge": "down"}
    assert b.metrics()["reward/judge_missing"] == 1.0
    assert RewardBreakdown.from_dict(b.to_dict()) == b
    assert step_metrics([old, b.to_dict()])["reward/judge_missing_rate"] == 1.0


def test_step_metrics_average_each_part_and_leave_out_parts_never_scored():
    scored = [combine({"tests": 1.0, "judge": 0.5}), combine({"tests": 0.0, "judge": None})]
    metrics = step_metrics(b.to_dict() for b in scored)
    assert metrics == {
        "reward/total": pytest.approx((0.825 + 0.0) / 2),
        "reward/tests": 0.5,
        "reward/judge": 0.5,
        "reward/judge_missing_rate": 0.5,
    }
    tests_only = RewardConfig(judge="none")
    assert "reward/judge" not in step_metrics([combine({"tests": 1, "judge": None}, tests_only)])


def _evidence(turns: int, tokens: int, limits: dict) -> Evidence:
    trajectory = Trajectory(
        task_id="t",
        policy="p",
        messages=[],
        turns=[Turn(index=i, assistant="x") for i in range(turns)],
        prompt_ids=[0] * (tokens // 2),
        completion_ids=[0] * (tokens - tokens // 2),
        limits=limits,
    )
    return Evidence(task=None, trajectory=trajectory, tests=None, judged=None)  # type: ignore[arg-type]


def test_the_budget_part_penalises_running_past_80_percent_of_a_limit():
    budget = PARTS["budget"].score
    limits = {"max_turns": 10, "max_total_tokens": 1000}
    assert budget(_evidence(8, 800, limits)) == 1.0  # at the budget: no penalty
    assert budget(_evidence(9, 100, limits)) == pytest.approx(0.5)  # turns past it
    assert budget(_evidence(2, 950, limits)) == pytest.approx(0.25)  # tokens past it
    assert budget(_evidence(10, 100, limits)) == 0.0  # at the limit
    assert isinstance(budget(_evidence(1, 10, {})), Missing)


def test_trl_reward_function_masks_infra_errors():
    fn = reward_function()
    breakdowns = [
        combine({"tests": 1.0, "judge": 1.0}),
        combine({"tests": 0.0, "judge": None}, RewardConfig(on_judge_missing="infra_error")),
        combine({"tests": 0.5, "judge": None}).to_dict(),
    ]
    out = fn(["a", "b", "c"], reward_breakdowns=breakdowns)
    assert out[0] == pytest.approx(1.0) and out[1] is None and out[2] == pytest.approx(0.5)
    assert not any(isinstance(v, float) and math.isnan(v) for v in out)
    tests = reward_function("tests")
    assert tests(["a"], reward_breakdowns=[combine({"tests": 0.3, "judge": 0.9})]) == [0.3]
    with pytest.raises(ValueError, match="one RewardBreakdown per completion"):
        fn(["a", "b"], reward_breakdowns=breakdowns[:1])
    assert isinstance(breakdowns[0], RewardBreakdown)
