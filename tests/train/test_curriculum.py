"""Running solve rates, skipping uninformative tasks, easy->hard order, and the sampler layout."""

from __future__ import annotations

import pytest

from tbrl_lib.train.step.curriculum import Curriculum, CurriculumSampler


def passed(rewards):
    """Whether each tests-only reward is a pass (weights 100/0: every test passed = 1.0)."""
    return [r is not None and r >= 1.0 for r in rewards]


def group(cur, task_id, rewards):
    cur.record_group(task_id, rewards, passed(rewards))


def rollouts(cur, task_ids, rewards):
    cur.record_rollouts(task_ids, rewards, passed(rewards))


def make(filter_after=2):
    return Curriculum({"a": "hard", "b": "easy", "c": "medium"}, filter_after_groups=filter_after)


def test_solve_rate_counts_rollouts_and_ignores_infra_errors():
    cur = make()
    group(cur, "a", [1.0, 0.0, None, 0.5])  # 0.5 is partial credit: not solved
    assert cur.records["a"].rollouts == 3 and cur.records["a"].solved == 1
    assert cur.records["a"].solve_rate == pytest.approx(1 / 3)
    group(cur, "a", [None, None])  # all infra errors: not a group at all
    assert cur.records["a"].groups == 1


def test_task_is_skipped_after_n_never_solved_groups_in_a_row():
    cur = make(filter_after=2)
    group(cur, "a", [0.0, 0.0])
    assert cur.active() == ["a", "b", "c"]
    group(cur, "a", [0.0, 0.0])
    assert "a" not in cur.active() and "never" in cur.skipped()["a"]


def test_a_mixed_group_breaks_the_streak():
    cur = make(filter_after=2)
    group(cur, "b", [1.0, 1.0])
    group(cur, "b", [1.0, 0.0])  # informative: resets
    group(cur, "b", [1.0, 1.0])
    assert "b" in cur.active()
    group(cur, "b", [1.0, 1.0])
    assert cur.skipped()["b"] == "mastered in 2 groups in a row"


def test_streak_of_one_kind_is_not_continued_by_the_other_kind():
    cur = make(filter_after=2)
    group(cur, "c", [1.0, 1.0])
    group(cur, "c", [0.0, 0.0])
    assert "c" in cur.active()


def test_constant_partial_credit_groups_are_filtered_too():
    cur = make(filter_after=2)
    group(cur, "a", [0.45, 0.45, 0.45])  # tests 0.2 + judge every time: no signal
    group(cur, "a", [0.45, 0.45, 0.45])
    assert cur.skipped()["a"] == "constant reward 0.45 in 2 groups in a row"
    group(cur, "b", [0.45, 0.45])
    group(cur, "b", [0.45, 0.5])  # differs: informative, streak reset
    assert "b" in cur.active()


def test_skipped_task_is_retried_after_n_steps_and_the_report_says_so():
    cur = Curriculum({"a": "easy", "b": "easy"}, filter_after_groups=1, retry_after_steps=2)
    rollouts(cur, ["a", "a", "b", "b"], [0.0, 0.0, 0.0, 1.0])  # step 1: a skipped
    assert cur.active() == ["b"]
    rollouts(cur, ["b", "b"], [0.0, 1.0])  # step 2: one step since the skip
    assert cur.active() == ["b"]
    rollouts(cur, ["b", "b"], [1.0, 0.0])  # step 3: two steps since: a is back
    assert cur.active() == ["a", "b"]
    assert [(e["step"], e["task_id"], e["event"]) for e in cur.events] == [
        (1, "a", "skipped"),
        (3, "a", "retried"),
    ]
    [row] = cur.report()
    assert row["task_id"] == "a" and row["status"] == "active" and row["retries"] == 1
    assert row["last_reason"] == "never solved in 1 groups in a row"
    assert cur.metrics()["curriculum/retried_tasks"] == 1.0


def test_without_retry_a_skip_lasts_the_run():
    cur = Curriculum({"a": "easy", "b": "easy"}, filter_after_groups=1)
    rollouts(cur, ["a", "a"], [0.0, 0.0])
    for _ in range(10):
        rollouts(cur, ["b", "b"], [0.0, 1.0])
    assert cur.active() == ["b"] and cur.report()[0]["status"] == "skipped"


def test_zero_disables_filtering():
    cur = make(filter_after=0)
    for _ in range(5):
        group(cur, "a", [0.0, 0.0])
    assert cur.skipped() == {}


def test_order_is_easy_to_hard_using_measurements_over_priors():
    cur = make()
    assert cur.order() == ["b", "c", "a"]  # priors: easy 0.6 > medium 0.4 > hard 0.2
    group(cur, "a", [1.0, 1.0, 1.0, 0.0])  # measured 0.75: easiest now
    group(cur, "b", [0.0, 0.0, 0.0, 1.0])  # measured 0.25
    assert cur.order() == ["a", "c", "b"]


def test_record_rollouts_groups_by_task():
    cur = make()
    rollouts(cur, ["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0])
    assert cur.records["a"].groups == 1 and cur.records["b"].solve_rate == 1.0
    with pytest.raises(KeyError, match="does not know task 'z'"):
        group(cur, "z", [1.0])


def test_tests_passing_is_solved_whatever_the_judge_keeps_the_total_at():
    """65% tests + 35% judge with the rule judge at 0.1: every test passed totals 0.685 (and
    0.035 when they fail). Solved is the tests passing, so the task is mastered, not
    'never solved' or 'constant reward 0.69'."""
    total_pass, total_fail = 0.65 * 1.0 + 0.35 * 0.1, 0.65 * 0.0 + 0.35 * 0.1
    cur = make(filter_after=2)
    cur.record_group("b", [total_pass] * 4, [True] * 4)
    assert cur.records["b"].solve_rate == 1.0 and "b" in cur.active()
    cur.record_group("b", [total_pass, total_pass, 0.7, total_pass], [True] * 4)
    assert cur.skipped()["b"] == "mastered in 2 groups in a row"
    [row] = cur.report()
    assert row["status"] == "mastered" and row["solve_rate"] == 1.0
    assert cur.metrics()["curriculum/mastered_tasks"] == 1.0
    # the same totals with failing tests are not solved: a constant partial reward
    cur.record_group("a", [total_fail] * 2, [False] * 2)
    cur.record_group("a", [total_fail] * 2, [False] * 2)
    assert cur.records["a"].solve_rate == 0.0
    assert cur.skipped()["a"] == "constant reward 0.03 in 2 groups in a row"  # 0.035
    assert {r["task_id"]: r["status"] for r in cur.report()} == {"a": "skipped", "b": "mastered"}


def test_solved_flags_must_match_the_rewards():
    with pytest.raises(ValueError):
        make().record_group("a", [1.0, 1.0], [True])


def test_sampler_repeats_like_trl_and_rotates_through_tasks():
    cur = make()
    sampler = CurriculumSampler(
        ["a", "b", "c"], cur, mini_repeat_count=2, tasks_per_chunk=2, repeat_count=1
    )
    indices = list(sampler)
    assert len(indices) == len(sampler) == 2 * 2 * 2  # 2 chunks x 2 tasks x 2 generations
    # First chunk: the two easiest by prior (b, c); second: a, then wrap to b.
    assert indices == [1, 1, 2, 2, 0, 0, 1, 1]


def test_sampler_skips_filtered_tasks_and_falls_back_when_all_are_skipped():
    cur = make(filter_after=1)
    sampler = CurriculumSampler(["a", "b", "c"], cur, mini_repeat_count=1, tasks_per_chunk=1)
    group(cur, "b", [1.0])
    group(cur, "c", [0.0])
    assert set(sampler) == {0}  # only a is left
    group(cur, "a", [0.0])
    assert len(list(sampler)) == 3  # everything skipped: falls back to all rows, never starves
