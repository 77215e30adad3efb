"""The skill families a pretrained model learns on CPU (`cpu-smollm2-learn`): count_matches
(`grep -c`) and fix_script (`sed -i`). Each reads its answers from its instruction, holds its
answer where the family says, and declares a slip (its typical mistake) that the tests catch."""

from __future__ import annotations

import asyncio
import re

import pytest

from tbrl_lib.synth.families.count_matches import LEVEL_WORDS, MESSAGES
from tbrl_lib.synth.generate import make_task
from tbrl_lib.train.warm_start.demos import slip_of


def test_count_matches_counts_one_level_word_of_the_log_it_names():
    for seed in range(30):
        task = make_task("count_matches", seed, "easy")
        answers = task.metadata["synth"]["answers"]
        log = task.environment.files[f"app/{answers['log'].removeprefix('/app/')}"]
        lines = log.splitlines()
        assert len(lines) == 12 and {line.split()[2] for line in lines} == set(LEVEL_WORDS)
        # grep -c WORD counts exactly the lines of that level: no message holds a level word
        count = int(re.search(r"^COUNT = (\d+)$", task.tests.pytest, re.M).group(1))
        assert count == sum(answers["word"] in line for line in lines)
        assert 0 < count < len(lines)  # counting every line is wrong
        for value in (answers["log"], answers["word"], answers["file"]):
            assert value in task.instruction
        assert task.solution.split() == [
            "grep",
            "-c",
            answers["word"],
            answers["log"],
            ">",
            answers["file"],
        ]
        assert slip_of(task) == task.solution.replace(" -c", "").strip()
    assert not any(word in message for word in LEVEL_WORDS for message in MESSAGES)


def test_count_matches_logs_grow_with_difficulty():
    hard = make_task("count_matches", 0, "hard")
    answers = hard.metadata["synth"]["answers"]
    assert (
        len(hard.environment.files[f"app{answers['log'].removeprefix('/app')}"].splitlines()) == 20
    )


def test_fix_script_names_the_placeholder_the_word_and_the_script():
    for seed in range(30):
        task = make_task("fix_script", seed, "easy")
        answers = task.metadata["synth"]["answers"]
        script = task.environment.files[f"app/{answers['script'].removeprefix('/app/')}"]
        assert answers["placeholder"] in script and answers["word"] not in script
        assert re.search(
            rf"prints {answers['placeholder']} .* print {answers['word']}", task.instruction
        )
        assert task.solution.startswith("sed -i ") and answers["script"] in task.solution
        assert slip_of(task) == task.solution.replace("sed -i ", "sed ").strip()
    words = {
        make_task("fix_script", s, "easy").metadata["synth"]["answers"]["word"] for s in range(200)
    }
    assert len(words) == 8  # easy draws from 8 words, as write_word does


@pytest.mark.docker
@pytest.mark.slow
def test_each_skill_familys_solution_passes_and_its_slip_fails(task_validator):
    tasks = [
        make_task(family, 70_000 + i, "easy")
        for i, family in enumerate(["write_word", "count_matches", "fix_script"])
    ]
    slipping = [t.model_copy(update={"id": f"{t.id}-slip", "solution": slip_of(t)}) for t in tasks]

    async def all_of_them():
        return await asyncio.gather(*(task_validator(t) for t in tasks + slipping))

    results = asyncio.run(all_of_them())
    right, slipped = results[: len(tasks)], results[len(tasks) :]
    assert all(r.ok and r.solution_scores[0] == 1.0 and r.nop_score == 0.0 for r in right)
    # the slip runs without an error but misses the answer: only the tests see it
    assert [r.solution_scores[0] for r in slipped] == [0.0, 0.2, 0.0]
