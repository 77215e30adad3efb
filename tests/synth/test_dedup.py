"""Near-duplicate detection and the balance report."""

from __future__ import annotations

import pytest

from tbrl_lib.synth.dedup import (
    DedupConfig,
    balance_report,
    balance_table,
    jaccard,
    most_similar,
    near_duplicates,
    shingles,
)
from tbrl_lib.synth.generate import generate, make_task


def test_jaccard_of_shingles():
    a = shingles("the quick brown fox jumps over the lazy dog")
    assert jaccard(a, a) == 1.0
    assert jaccard(a, shingles("completely different words in this other sentence")) == 0.0
    assert 0 < jaccard(a, shingles("the quick brown fox jumps over the lazy cat")) < 1


def test_a_reworded_copy_is_found_and_distinct_tasks_are_not():
    tasks = [make_task(f, 1, "medium") for f in ("log_analysis", "data_transform", "sqlite_report")]
    original = tasks[0]
    copy = original.model_copy(
        update={
            "id": "reworded-copy",
            "instruction": original.instruction.replace("web server", "HTTP daemon").replace(
                "Write", "Produce"
            ),
        }
    )
    pairs = near_duplicates(tasks + [copy])
    assert [(p.a, p.b) for p in pairs] == [(original.id, "reworded-copy")]
    assert pairs[0].parts["environment"] == 1.0 and pairs[0].parts["instruction"] < 1.0


def test_lsh_finds_what_all_pairs_would_find():
    # Candidates come from LSH buckets; compare with brute force over every pair.
    tasks = generate("all", 60, seed=5)
    tasks += [t.model_copy(update={"id": t.id + "-dup"}) for t in tasks[:5]]
    config = DedupConfig(threshold=0.75)
    found = {(p.a, p.b) for p in near_duplicates(tasks, config)}
    assert {(t.id, t.id + "-dup") for t in tasks[:5]} <= found
    brute = set()
    from tbrl_lib.synth.dedup import task_parts

    sets = [{k: shingles(v) for k, v in task_parts(t).items()} for t in tasks]
    for i in range(len(tasks)):
        for j in range(i + 1, len(tasks)):
            score = sum(config.weights[k] * jaccard(sets[i][k], sets[j][k]) for k in config.weights)
            if score / sum(config.weights.values()) >= config.threshold:
                brute.add((tasks[i].id, tasks[j].id))
    assert found == brute


def test_most_similar_instruction():
    tasks = generate("all", 9, seed=0)
    twin, sim = most_similar(
        tasks[3], tasks[:3] + tasks[4:] + [tasks[3].model_copy(update={"id": "x"})]
    )
    assert (twin, sim) == ("x", 1.0)


def test_balance_table_and_report():
    from tbrl_lib.synth.families import FAMILIES

    n = 3 * len(FAMILIES)  # one task per family and difficulty
    tasks = generate("all", n, seed=0)
    table = balance_table(tasks)
    assert list(table.columns) == ["easy", "medium", "hard", "total"]
    assert table.loc["total", "total"] == n
    assert table.loc["version-control", "total"] == 3
    report = balance_report(tasks)
    assert report["difficulties"] == {"easy": 1 / 3, "medium": 1 / 3, "hard": 1 / 3} or report[
        "difficulties"
    ] == pytest.approx({"easy": 0.3333, "medium": 0.3333, "hard": 0.3333}, abs=1e-3)
    assert report["imbalance_ratio"] == 2.0  # two families share two categories
    assert balance_report([])["tasks"] == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"threshold": 0}, "threshold must be in"),
        ({"num_perm": 64, "bands": 7}, "must divide"),
        ({"weights": {"title": 1.0}}, "weights must name parts"),
    ],
)
def test_bad_config_says_how_to_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DedupConfig(**kwargs)
