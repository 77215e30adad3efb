"""The write_word family (the CPU learning demo's): the word and the file come from the
instruction, the pool of words grows with difficulty, partial credit for the file alone."""

from __future__ import annotations

import pytest

from tbrl_lib.synth.families.write_word import FILE_NAMES
from tbrl_lib.synth.generate import make_task


@pytest.mark.parametrize(("difficulty", "words"), [("easy", 8), ("medium", 16), ("hard", 26)])
def test_the_word_pool_grows_with_difficulty(difficulty, words):
    tasks = [make_task("write_word", seed, difficulty) for seed in range(400)]
    assert len({t.metadata["synth"]["answers"]["word"] for t in tasks}) == words
    assert {t.metadata["synth"]["answers"]["file"] for t in tasks} == {
        f"/app/{name}.txt" for name in FILE_NAMES
    }


def test_answers_are_in_the_instruction_and_the_solution_writes_them():
    for seed in range(20):
        task = make_task("write_word", seed, "easy")
        word, path = task.metadata["synth"]["answers"].values()
        assert f" {word} " in task.instruction and path in task.instruction
        assert task.solution.strip() == f"echo {word} > {path}"
    weights = make_task("write_word", 0, "easy").tests.weights
    assert weights == {"test_file_exists": 0.2, "test_word_written": 0.8}
