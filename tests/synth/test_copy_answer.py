"""The copy_answer family: instance-specific answers, partial credit, a short oracle."""

from __future__ import annotations

from tbrl_lib.synth.generate import make_task


def test_instances_differ_and_answers_are_in_the_instruction():
    tasks = [make_task("copy_answer", seed, "easy") for seed in range(20)]
    codes = {t.metadata["synth"]["answers"]["code"] for t in tasks}
    assert len(codes) == 20  # the answer must be read from each instance, not memorised
    for t in tasks:
        answers = t.metadata["synth"]["answers"]
        assert answers["code"] in t.instruction and answers["owner"] in t.instruction
        assert answers["code"] in t.solution and len(t.solution.splitlines()) == 1


def test_weights_give_partial_credit_and_sum_to_one():
    weights = make_task("copy_answer", 0, "easy").tests.weights
    assert len(weights) == 3 and max(weights.values()) < 1.0
    assert abs(sum(weights.values()) - 1.0) < 1e-9


def test_same_seed_same_task():
    assert (
        make_task("copy_answer", 7, "medium").model_dump()
        == make_task("copy_answer", 7, "medium").model_dump()
    )
