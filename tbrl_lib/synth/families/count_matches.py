"""Family: count the lines of a log that hold one word, with a pipe-free `grep -c`.

A text-processing skill beside `write_word`'s file writing and `fix_script`'s in-place
edit: the log's name, the level word to count and the output file come from the
instruction, and the answer (the count) is in the log, not in the instruction. Each log
holds 12 lines at easy (4 more per level), every level word at least once, so counting
every line, or writing the matching lines instead of their number, is wrong. Tests: the
output file exists (0.2), it holds the count (0.8).

`slip` is the mistake a weaker model makes here: `grep WORD LOG > OUT` (the matching lines,
`-c` forgotten). A warm start on a teacher that slips leaves GRPO a mistake that only the
tests see (`train/warm_start/demos.py`). Left out on purpose: pipes longer than one
command, regular expressions; the family is sized for a 135M model on 2 CPU cores.
"""

from __future__ import annotations

import random

from tbrl_lib.synth.families.base import LEVEL, Draft, pytest_module
from tbrl_lib.synth.families.write_word import FILE_NAMES
from tbrl_lib.tasks.model import Difficulty

LEVEL_WORDS = ["ERROR", "WARN", "INFO", "DEBUG"]
LOG_NAMES = ["server", "worker", "api", "cron", "auth", "mail", "db", "proxy"]
LOGS_PER_LEVEL = {0: 4}
MESSAGES = [
    "disk usage at 81%",
    "request served in 12 ms",
    "cache miss for key 42",
    "retrying connection",
    "user logged in",
    "job finished",
    "slow query on table orders",
    "config reloaded",
    "queue length 17",
    "certificate expires in 30 days",
]
"""Log messages; none holds a level word, so `grep -c WORD` counts exactly one level."""

TESTS = """
def test_count_file_exists():
    assert Path(OUT).exists()


def test_count_is_right():
    assert Path(OUT).exists() and Path(OUT).read_text().strip() == str(COUNT)
"""


def log_lines(rng: random.Random, n: int) -> list[str]:
    """`n` log lines with every level word at least once, in random order."""
    levels = LEVEL_WORDS + [rng.choice(LEVEL_WORDS) for _ in range(n - len(LEVEL_WORDS))]
    rng.shuffle(levels)
    return [
        f"2026-11-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
        f"{level} {rng.choice(MESSAGES)}"
        for level in levels
    ]


def count_matches(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    log_name = rng.choice(LOG_NAMES[: LOGS_PER_LEVEL.get(level, len(LOG_NAMES))])
    word, out_name = rng.choice(LEVEL_WORDS), rng.choice(FILE_NAMES)
    lines = log_lines(rng, 12 + 4 * level)
    count = sum(line.split()[2] == word for line in lines)
    log, out = f"/app/{log_name}.log", f"/app/{out_name}.txt"
    return Draft(
        title=f"Count {word} lines in {log_name}.log",
        instruction=f"Count the lines of {log} that contain {word} and write the number to {out}.",
        app_files={f"{log_name}.log": "\n".join(lines) + "\n"},
        tests=pytest_module({"OUT": out, "COUNT": count}, TESTS),
        weights={"test_count_file_exists": 0.2, "test_count_is_right": 0.8},
        solution=f"grep -c {word} {log} > {out}\n",
        slip=f"grep {word} {log} > {out}\n",
        tags=["text-processing", "grep"],
        # what the instruction names: the held-out split and GRPO's task identity go by the
        # prompt (the count is in the tests, COUNT)
        answers={"word": word, "log": log, "file": out},
    )
