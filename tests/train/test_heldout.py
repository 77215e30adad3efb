"""The held-out split: by content (answer hash), so training never sees a held-out instance."""

from __future__ import annotations

import json

import pytest

from tbrl_lib.synth.generate import make_task
from tbrl_lib.train.heldout.split import (
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


def test_several_families_interleave_and_share_a_count():
    from tbrl_lib.train.heldout.split import family_of, mixed_training_tasks, shares

    assert shares(48, 3) == [16, 16, 16] and shares(7, 3) == [3, 2, 2] and shares(2, 3) == [1, 1, 0]
    tasks = mixed_training_tasks(["write_word", "count_matches", "fix_script"], [2, 3, 1])
    assert [family_of(t) for t in tasks] == [
        "write_word",
        "count_matches",
        "fix_script",
        "write_word",
        "count_matches",
        "count_matches",
    ]
    assert not any(is_heldout(t) for t in tasks)
    assert family_of(make_task("copy_answer", 0, "easy")) == "copy_answer"


def _evaluation(solved: dict[str, bool]) -> dict:
    from tbrl_lib.evaluate.results import FailureMode, RunConfig, RunResults, TrialResult

    run = RunResults(config=RunConfig(policy="p", tasks_source="heldout"))
    for task_id, ok in solved.items():
        run.add(
            TrialResult(
                task_id=task_id,
                attempt=0,
                resolved=ok,
                score=float(ok),
                failure_mode=FailureMode.resolved if ok else FailureMode.unresolved,
            )
        )
    return {"results": run}


def test_the_family_table_reports_each_family_and_the_pool_with_paired_gains():
    from tbrl_lib.train.heldout.evaluator import family_table

    tasks = heldout_tasks("write_word", 4) + heldout_tasks("count_matches", 4)
    ww, cm = [t.id for t in tasks[:4]], [t.id for t in tasks[4:]]
    sft = _evaluation({**dict.fromkeys(ww, False), **dict.fromkeys(cm, False)} | {ww[0]: True})
    grpo = _evaluation({**dict.fromkeys(ww, True), **dict.fromkeys(cm, False)})
    rows = family_table({"warm start": sft, "grpo": grpo}, tasks)
    by = {(r["family"], r["model"]): r for r in rows}
    assert [r["family"] for r in rows] == ["write_word"] * 2 + ["count_matches"] * 2 + ["all"] * 2
    assert by["write_word", "warm start"]["solve_rate"] == 0.25
    assert by["write_word", "grpo"]["difference"] == 0.75  # 3 instances gained, paired
    assert by["count_matches", "grpo"]["difference"] == 0.0
    pooled = by["all", "grpo"]
    assert (pooled["instances"], pooled["solve_rate"], pooled["difference"]) == (8, 0.5, 0.375)
    low, high = pooled["difference_ci"]
    assert 0.0 <= low <= 0.375 <= high and "vs_previous" not in by["all", "warm start"]
    assert by["all", "warm start"]["interval (Wilson 95%)"].startswith("[0.0")


def test_distinct_instances_of_every_family_have_distinct_prompts():
    # GRPO tells tasks apart by their prompt; the split must not put one prompt on both sides
    for family in ("write_word", "count_matches", "fix_script"):
        train, held = training_tasks(family, 40), heldout_tasks(family, 12)
        prompts = [t.instruction for t in train + held]
        assert len(set(prompts)) == len(prompts), family
