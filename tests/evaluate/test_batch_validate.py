"""Generated tasks pass the shared validator (real Docker): one task per family, the
difficulties spread over the sample; and the tables around validation results."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.evaluate.batch_validate import results_frame, summary_table
from tbrl_lib.evaluate.validate import ValidationResult, Verdict
from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.generate import generate, make_task

SAMPLE_SEED = 90_000
"""Far from the seeds the 200-task run uses, so cached images do not hide a build."""


@pytest.mark.docker
@pytest.mark.slow
def test_one_task_per_family_validates(task_validator):
    levels = ["easy", "medium", "hard"]
    tasks = [make_task(family, SAMPLE_SEED + i, levels[i % 3]) for i, family in enumerate(FAMILIES)]

    async def all_of_them():
        return await asyncio.gather(*(task_validator(t) for t in tasks))

    results = asyncio.run(all_of_them())
    failures = {r.task_id: r.reasons for r in results if not r.ok}
    assert not failures, failures
    assert all(r.nop_score <= 0.2 and r.solution_scores == [1.0, 1.0, 1.0] for r in results)


def test_summary_table_counts_by_family():
    tasks = generate("all", 4, seed=0)
    results = [
        ValidationResult(
            t.id,
            t.difficulty.value,
            t.category,
            nop_score=0.0,
            solution_scores=[1.0],
            timings={"total": 10.0 + i},
        )
        for i, t in enumerate(tasks)
    ]
    results[1].fail("reference solution scores 0.50, not 1.0")
    results[2].infra("sandbox: daemon went away")
    table = summary_table(results, tasks)
    assert table.loc["total", "tasks"] == 4 and table.loc["total", "passed"] == 2
    assert table.loc["data_transform", "failed"] == 1 and table.loc["config_repair", "errors"] == 1
    frame = results_frame(results)
    assert list(frame["verdict"]) == ["pass", "fail", "error", "pass"]
    assert "not 1.0" in frame.loc[1, "reasons"]
    assert results[0].verdict is Verdict.passed
