"""Family: repair a shell script in place, replacing the placeholder it prints.

An editing skill beside `write_word` (write a file) and `count_matches` (read a file): the
script `/app/<name>.sh` echoes a line with a placeholder (`TODO`, `FIXME`, ...) where a
word belongs, and the instruction names both; a harder script prints other lines first (one
per level above easy) and draws its word from more words. The fix is one `sed -i 's/OLD/NEW/' FILE`.
Tests run the script: the placeholder is gone from its output (0.2), the word is in it (0.8).

`slip` is the mistake a weaker model makes here: `sed` without `-i`, which prints the
repaired script and leaves the file as it was (a warm start on a teacher that slips leaves
GRPO a mistake only the tests see, `train/warm_start/demos.py`). Left out on purpose:
scripts longer than one line of output, quoting, regular expressions.
"""

from __future__ import annotations

import random

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, pytest_module
from tbrl_lib.tasks.model import Difficulty

PLACEHOLDERS = ["TODO", "FIXME", "CHANGEME", "UNSET"]
SCRIPT_NAMES = ["greet", "banner", "motd", "welcome", "status", "title", "label", "header"]
WORDS_PER_LEVEL = {0: 8, 1: 16}
SUBJECTS = ["project", "team", "host", "release"]
OTHER_LINES = ['echo "build: 42"', 'echo "mode: batch"', "date +%Y", 'echo "owner: ops"']
"""Lines a harder script prints before the broken one (none at easy: the CPU preset's level)."""

TESTS = """
def _output():
    done = subprocess.run(["bash", SCRIPT], capture_output=True, text=True, timeout=10)
    return done.stdout


def test_placeholder_gone():
    assert OLD not in _output()


def test_prints_word():
    out = _output()
    assert f"{SUBJECT}: {WORD}" in out and OLD not in out
"""


def fix_script(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    word = rng.choice(WORDS[: WORDS_PER_LEVEL.get(level, len(WORDS))])
    old, name, subject = (
        rng.choice(PLACEHOLDERS),
        rng.choice(SCRIPT_NAMES),
        rng.choice(SUBJECTS),
    )
    script = f"/app/{name}.sh"
    body = [*rng.sample(OTHER_LINES, min(level, len(OTHER_LINES))), f'echo "{subject}: {old}"']
    return Draft(
        title=f"Fix {name}.sh to print {word}",
        instruction=(
            f"The script {script} prints {old} where it should print {word}. "
            f"Fix the script in place so that it prints {word}."
        ),
        app_files={f"{name}.sh": "\n".join(["#!/bin/bash", *body]) + "\n"},
        tests=pytest_module(
            {"SCRIPT": script, "OLD": old, "WORD": word, "SUBJECT": subject}, TESTS
        ),
        weights={"test_placeholder_gone": 0.2, "test_prints_word": 0.8},
        solution=f"sed -i 's/{old}/{word}/' {script}\n",
        slip=f"sed 's/{old}/{word}/' {script}\n",
        tags=["editing", "sed"],
        answers={"word": word, "placeholder": old, "script": script},
    )
