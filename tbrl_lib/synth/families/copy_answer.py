"""Family: copy two instance-specific values from the instruction into files.

The smallest family where a policy must read its own instruction: a ticket code and an
owner name, both drawn per seed, go to `/app/answer.txt` and `/app/owner.txt`. Weighted
tests give partial credit (answer file present, code right, owner right), so a model that
gets one value right earns part of the reward - the graded signal GRPO needs on CPU.
The reference solution is one `echo` line (a one-line YAML `cmd:` in the action), short
enough for a tiny model to imitate.

Left out on purpose: any exploration of /app (there is nothing to find); difficulty only
lengthens the code.
"""

from __future__ import annotations

import random

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, pytest_module
from tbrl_lib.tasks.model import Difficulty

LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"

TESTS = """
def _read(name):
    path = Path("/app") / name
    return path.read_text().strip() if path.exists() else None


def test_answer_file_exists():
    assert Path("/app/answer.txt").exists()


def test_code_copied():
    assert _read("answer.txt") == CODE


def test_owner_copied():
    assert _read("owner.txt") == OWNER
"""


def copy_answer(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    code = "".join(rng.choice(LETTERS) for _ in range(3 + level)) + f"-{rng.randint(100, 999)}"
    owner = rng.choice(WORDS)
    instruction = (
        f"Ticket {code} belongs to {owner}.\n"
        f"Write the ticket code {code} to /app/answer.txt and the owner name {owner} "
        "to /app/owner.txt, one line each."
    )
    solution = f"echo {code} > /app/answer.txt; echo {owner} > /app/owner.txt\n"
    return Draft(
        title=f"Record ticket {code}",
        instruction=instruction,
        app_files={},
        tests=pytest_module({"CODE": code, "OWNER": owner}, TESTS),
        weights={"test_answer_file_exists": 0.2, "test_code_copied": 0.5, "test_owner_copied": 0.3},
        solution=solution,
        tags=["copy", "files"],
        answers={"code": code, "owner": owner},
    )
