"""Held-out evaluation of families: instances never trained on, through the evaluation harness.

The split is by content, not only by seed: an instance is held out when the hash of its
answers (`metadata.synth.answers`, e.g. the word and the file of `write_word`) falls in
one bucket of `HELDOUT_BUCKETS`. `training_tasks` skips those instances and
`heldout_tasks` keeps only them, so a small family (64 distinct `write_word` instances at
easy) never shows the policy a held-out word-and-file pair during SFT or GRPO; each word
and each file still appears in training, in other pairs. Seeds differ too (training from
`first_seed` = 1000, held-out from 0).

Several families train together: `mixed_training_tasks` interleaves their instances (one of
each in turn), `family_of` names a task's family, and `shares` splits a count over them.

`evaluate_policy` runs `run_eval` with any policy object (a checkpoint's `HFPolicy`, the
trainer's own `TokenPolicy`) and returns the harness's summary plus its flat `eval/...`
metrics, with `eval/solve_rate` (= accuracy: every test passed).

Left out: pass@k for k > 1 (one attempt per instance keeps the CPU demo short).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Any

from tbrl_lib.evaluate.harness import EVAL_WORDING, OutageWording, run_eval
from tbrl_lib.evaluate.results import RunConfig, eval_metrics
from tbrl_lib.rollout import RolloutConfig
from tbrl_lib.synth.generate import make_task
from tbrl_lib.tasks.model import Task

HELDOUT_BUCKETS = 5
"""One instance in this many (by answer hash) is held out."""
MAX_SCAN = 20_000
"""Seeds tried before giving up on finding enough instances of one side of the split."""


def is_heldout(task: Task) -> bool:
    return _key_is_heldout(_answers_key(task))


def _answers_key(task: Task) -> str:
    """The instance's content: its answers, serialised the same way every time."""
    answers = task.metadata.get("synth", {}).get("answers")
    if answers is None:
        raise ValueError(f"task {task.id} has no synth answers: the split needs a generated task")
    return json.dumps(answers, sort_keys=True)


def _key_is_heldout(key: str) -> bool:
    return hashlib.sha256(key.encode()).digest()[0] % HELDOUT_BUCKETS == 0


def _instances(
    family: str, difficulty: str, first_seed: int, n: int, heldout: bool, distinct: bool
) -> list[Task]:
    found: dict[str, Task] = {}
    side = "held-out" if heldout else "training"
    for seed in range(first_seed, first_seed + MAX_SCAN):
        task = make_task(family, seed, difficulty)
        key = _answers_key(task)
        if _key_is_heldout(key) != heldout:
            continue
        found.setdefault(key if distinct else task.id, task)
        if len(found) == n:
            return list(found.values())
    raise ValueError(
        f"{family}/{difficulty} has only {len(found)} distinct {side} instances within "
        f"{MAX_SCAN} seeds, {n} were asked for: ask for fewer or use a harder difficulty"
    )


def training_tasks(
    family: str, n: int, difficulty: str = "easy", first_seed: int = 1000, distinct: bool = True
) -> list[Task]:
    """`n` instances for SFT or GRPO (seeds from `first_seed`), none of them held out;
    `distinct`: no two with the same content (GRPO tells tasks apart by their prompt)."""
    return _instances(family, difficulty, first_seed, n, heldout=False, distinct=distinct)


def heldout_tasks(family: str, n: int, difficulty: str = "easy", first_seed: int = 0) -> list[Task]:
    """`n` distinct held-out instances (seeds from `first_seed`)."""
    return _instances(family, difficulty, first_seed, n, heldout=True, distinct=True)


def mixed_training_tasks(
    families: Sequence[str],
    counts: Sequence[int],
    difficulty: str = "easy",
    first_seed: int = 1000,
    distinct: bool = True,
) -> list[Task]:
    """`counts[i]` training instances of `families[i]`, interleaved one of each in turn, so
    any prefix of the list (a step's tasks, the first demonstrations) mixes the families."""
    per_family = [
        training_tasks(family, n, difficulty, first_seed, distinct) if n else []
        for family, n in zip(families, counts, strict=True)
    ]
    return [task for turn in zip_longest(*per_family) for task in turn if task is not None]


def shares(total: int, parts: int) -> list[int]:
    """`total` split over `parts` as evenly as it goes, the first parts one larger."""
    return [total // parts + (i < total % parts) for i in range(parts)]


def family_of(task: Task) -> str | None:
    """The procedural family a generated task came from; None for any other task."""
    return task.metadata.get("synth", {}).get("family")


def evaluate_policy(
    policy: Any,
    tasks: list[Task],
    out_dir: str | Path,
    name: str,
    rollout: RolloutConfig,
    concurrency: int = 4,
    outage: OutageWording = EVAL_WORDING,
) -> dict[str, Any]:
    """One attempt per task with the rule judge, in `rollout`'s episode and reward; returns
    summary + `eval/...` metrics. `outage`: how an engine outage that stops it is worded."""
    config = RunConfig(
        policy=name,
        tasks_source="heldout",
        concurrency=concurrency,
        episode=rollout.episode,
        reward=rollout.reward.model_copy(update={"judge": "rule"}),  # offline, whatever trains
    )
    results = run_eval(
        tasks,
        config,
        out_dir,
        progress=False,
        policy=policy,
        engine_wait_s=rollout.sandbox.engine_wait_s,
        outage=outage,
    )
    metrics = eval_metrics(results.summary)
    metrics["eval/solve_rate"] = metrics["eval/accuracy"]
    return {"summary": results.summary, "metrics": metrics, "out": str(out_dir), "results": results}
