"""The held-out split: by content (answer hash), so training never sees a held-out instance."""

from __future__ import annotations

import json

import pytest

from tbrl_lib.synth.generate import make_task
from tbrl_lib.train.warm_start.heldout import (
    HELDOUT_BUCKETS,
    heldout_tasks,
    is_heldout,
    training_tasks,
)


def answers(task):
    return json.dumps(task.metadata["synth"]["answers"], sort_keys=True)


def test_training_and_heldout_instances_never_share_content():
    train = training_tasks("write_word", 40)
    held = heldout_tasks("write_word", 16)
    assert len({answers(t) for t in train}) == 40 and len({answers(t) for t in held}) == 16
    assert not {answers(t) for t in train} & {answers(t) for t in held}
    assert all(not is_heldout(t) for t in train) and all(is_heldout(t) for t in held)
    # each held-out word and file still appears in training, in other pairs
    seen = {v for t in train for v in t.metadata["synth"]["answers"].values()}
    assert all(set(t.metadata["synth"]["answers"].values()) <= seen for t in held)


def test_a_small_family_runs_out_of_distinct_instances_with_a_clear_error():
    repeated = training_tasks("write_word", 200, distinct=False)  # demonstrations may repeat
    assert len({t.id for t in repeated}) == 200 and len({answers(t) for t in repeated}) < 64
    with pytest.raises(ValueError, match="distinct held-out instances"):
        heldout_tasks("write_word", 40)


def test_roughly_one_in_buckets_is_held_out_and_the_split_is_deterministic():
    tasks = [make_task("copy_answer", seed, "easy") for seed in range(300)]
    share = sum(map(is_heldout, tasks)) / len(tasks)
    assert abs(share - 1 / HELDOUT_BUCKETS) < 0.08
    assert [t.id for t in heldout_tasks("copy_answer", 5)] == [
        t.id for t in heldout_tasks("copy_answer", 5)
    ]


def test_a_task_that_was_not_generated_cannot_be_split():
    from tbrl_lib.tasks.model import Environment, Task, Tests

    task = Task(
        id="hand-written",
        instruction="x",
        environment=Environment(dockerfile="FROM x\n"),
        tests=Tests(pytest="def test_x():\n    pass\n"),
    )
    with pytest.raises(ValueError, match="hand-written has no synth answers"):
        is_heldout(task)
