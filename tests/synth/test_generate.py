"""Procedural families: determinism, diversity of substance, difficulty scaling, and
structural soundness of every family's tasks (no Docker; see test_validation.py for that)."""

from __future__ import annotations

import ast
import json
from collections import Counter

import pytest

from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.families.base import BASE_IMAGE
from tbrl_lib.synth.generate import generate, make_task, plan
from tbrl_lib.tasks.model import Difficulty

LEVELS = [Difficulty.easy, Difficulty.medium, Difficulty.hard, Difficulty.extremely_hard]


def test_there_are_at_least_eight_families():
    assert len(FAMILIES) >= 8
    assert len({f.category for f in FAMILIES.values()}) >= 5


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_seed_gives_the_same_task(family):
    a, b = make_task(family, 7, "medium"), make_task(family, 7, "medium")
    assert a.content_hash() == b.content_hash()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_different_seeds_give_different_expected_answers(family):
    # Substance, not names: the planted answers the tests check differ between seeds. Small
    # families (write_word: 128 instances at medium) may repeat one by chance, never most.
    answers = [
        json.dumps(make_task(family, s, "medium").metadata["synth"]["answers"], sort_keys=True)
        for s in range(6)
    ]
    assert len(set(answers)) >= 5, f"{family}: seeds 0..5 share expected answers"


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("level", LEVELS, ids=lambda d: d.value)
def test_every_task_is_structurally_sound(family, level):
    task = make_task(family, 3, level)
    assert task.environment.dockerfile.startswith(f"FROM {BASE_IMAGE}\n")
    for line in task.environment.dockerfile.splitlines():  # builds never reach the network
        assert not any(word in line for word in ("apt-get", "pip install", "curl ", "wget "))
    ast.parse(task.tests.pytest)  # the tests at least compile
    assert set(task.tests.weights) == set(task.tests.test_names())
    assert task.solution and task.solution.strip()
    assert task.difficulty == level and task.category == FAMILIES[family].category
    assert task.id == f"{family.replace('_', '-')}-{level.value.replace('_', '-')}-s3"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_difficulty_changes_the_substance(family):
    # Harder instances check more, ship more data or break more things.
    def size(task):
        return (
            len(task.tests.weights),
            sum(map(len, task.environment.files.values())),
            len(
                task.metadata["synth"]["answers"].get(
                    "faults", task.metadata["synth"]["answers"].get("bugs", [])
                )
            ),
            len(task.instruction),
        )

    easy = [size(make_task(family, s, "easy")) for s in range(4)]
    hard = [size(make_task(family, s, "hard")) for s in range(4)]
    assert any(h > e for e, h in zip(map(max, zip(*easy)), map(min, zip(*hard)))), (easy, hard)


def test_plan_cycles_families_and_difficulties():
    triples = plan("all", 2 * len(FAMILIES), seed=100, difficulty="mixed")
    assert [t[0] for t in triples[: len(FAMILIES)]] == list(FAMILIES)
    assert [t[1] for t in triples] == list(range(100, 100 + 2 * len(FAMILIES)))


@pytest.mark.parametrize("family", ["all", "git_surgery", "git_surgery,sqlite_report"])
@pytest.mark.parametrize("n", [3, 9, 10, 27])
def test_mixed_difficulty_is_balanced_in_any_batch(family, n):
    # `--difficulty mixed --n 9` once gave nine easy tasks (9 families, one round)
    levels = Counter(t[2] for t in plan(family, n, seed=0, difficulty="mixed"))
    assert set(levels) == {Difficulty.easy, Difficulty.medium, Difficulty.hard}
    assert max(levels.values()) - min(levels.values()) <= 1, levels


def test_mixed_difficulty_gives_every_family_every_level_in_three_rounds():
    triples = plan("all", 3 * len(FAMILIES), seed=0, difficulty="mixed")
    for name in FAMILIES:
        assert {t[2] for t in triples if t[0] == name} == {
            Difficulty.easy,
            Difficulty.medium,
            Difficulty.hard,
        }, name


def test_batches_are_unique_and_reproducible():
    first = generate("all", 30, seed=0)
    assert len({t.id for t in first}) == 30
    assert [t.content_hash() for t in first] == [
        t.content_hash() for t in generate("all", 30, seed=0)
    ]


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"family": "nope"}, "unknown task family"),
        ({"difficulty": "brutal"}, "unknown difficulty"),
        ({"n": -1}, "n must be >= 0"),
    ],
)
def test_bad_arguments_say_what_to_use(bad, message):
    with pytest.raises(ValueError, match=message):
        generate(**{"family": "all", "n": 2, "seed": 0, **bad})
