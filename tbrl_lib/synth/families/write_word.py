"""Family: write one word from the instruction into one named file.

The family the CPU learning demo trains on. Two things vary per seed, each from a small
set: the word (8 at easy, 16 at medium, all 26 above) and the file (`/app/<name>.txt`,
one of 8 names): 64 distinct instances at easy. From hard on the instruction also names
a word not to write. A policy succeeds only if its command depends on its instruction, and a
model that has not learned that still lands on the right word by chance (1 in 8 at easy):
the graded, learnable signal GRPO needs from a tiny model. Tests: the named file exists
(0.2), it holds the word (0.8). It declares no `slip`: the default one (`demos.slipped`,
the right file written in /tmp) is its typical mistake.

Why not `copy_answer`: its codes are random letter strings, and copying them needs an
induction-style lookup a 4-layer model trained for minutes on 2 cores does not learn (its
held-out solve rate stayed 0). Here each value is a word the model can recognise anywhere
in the prompt. Left out on purpose: anything to explore; the demo measures learning, not
skill.
"""

from __future__ import annotations

import random

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, pytest_module
from tbrl_lib.tasks.model import Difficulty

FILE_NAMES = ["answer", "result", "output", "notes", "reply", "record", "final", "summary"]
WORDS_PER_LEVEL = {0: 8, 1: 16}

TESTS = """
def test_file_exists():
    assert Path(PATH).exists()


def test_word_written():
    assert Path(PATH).exists() and Path(PATH).read_text().strip() == WORD
"""


def write_word(rng: random.Random, difficulty: Difficulty) -> Draft:
    words = WORDS[: WORDS_PER_LEVEL.get(LEVEL[difficulty], len(WORDS))]
    word, name = rng.choice(words), rng.choice(FILE_NAMES)
    path = f"/app/{name}.txt"
    instruction = f"Write the word {word} to {path}."
    if LEVEL[difficulty] >= 2:  # a second word in the instruction that must not be written
        decoy = rng.choice([w for w in words if w != word])
        instruction = f"Do not write {decoy}. " + instruction
    return Draft(
        title=f"Write {word} to {name}.txt",
        instruction=instruction,
        app_files={},
        tests=pytest_module({"WORD": word, "PATH": path}, TESTS),
        weights={"test_file_exists": 0.2, "test_word_written": 0.8},
        solution=f"echo {word} > {path}\n",
        tags=["files"],
        answers={"word": word, "file": path},
    )
