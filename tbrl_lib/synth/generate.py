"""Draw tasks from the procedural families: one seed -> one task, deterministically.

`make_task(family, seed, difficulty)` is the unit; `generate(...)` draws a batch: family
"all" cycles through every family, difficulty "mixed" cycles easy/medium/hard from one task
to the next (so any batch is balanced, and each family meets every level within three
rounds of families), and the instance seeds are `seed, seed+1, ...` so a batch is
reproducible and two batches with
different start seeds share no instance. The generator's random stream is keyed by
(family, seed, difficulty), so adding a family never changes another family's tasks.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from tqdm.auto import tqdm

from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.families.base import to_task
from tbrl_lib.tasks.model import Difficulty, Task

MIXED = "mixed"
CYCLE = [Difficulty.easy, Difficulty.medium, Difficulty.hard]
"""What `difficulty="mixed"` cycles through (extremely_hard only on request)."""


def family_names(family: str | Iterable[str] = "all") -> list[str]:
    """Resolve "all", one name, a comma-separated list or an iterable to known names."""
    if isinstance(family, str):
        family = list(FAMILIES) if family == "all" else [f.strip() for f in family.split(",")]
    names = list(family)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise ValueError(
            f"unknown task family {unknown or names}: choose from {', '.join(FAMILIES)} or 'all'"
        )
    return names


def parse_difficulty(value: str | Difficulty) -> Difficulty | str:
    if isinstance(value, Difficulty) or value == MIXED:
        return value
    try:
        return Difficulty(value)
    except ValueError:
        raise ValueError(
            f"unknown difficulty {value!r}: use one of "
            f"{', '.join(d.value for d in Difficulty)} or '{MIXED}'"
        ) from None


def make_task(family: str, seed: int, difficulty: Difficulty | str = Difficulty.medium) -> Task:
    """One task of `family` from `seed`; the same arguments always give the same task."""
    (name,) = family_names([family])
    level = parse_difficulty(difficulty)
    if level == MIXED:
        raise ValueError("make_task needs one difficulty, not 'mixed'")
    fam = FAMILIES[name]
    rng = random.Random(f"tbrl-synth:{name}:{seed}:{level.value}")
    return to_task(fam, fam.make(rng, level), seed, level)


def plan(
    family: str | Iterable[str] = "all",
    n: int = 8,
    seed: int = 0,
    difficulty: Difficulty | str = MIXED,
) -> list[tuple[str, int, Difficulty]]:
    """The (family, seed, difficulty) triples `generate` will draw, in order."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    names = family_names(family)
    level = parse_difficulty(difficulty)
    out = []
    # A family count that divides the cycle would pin each family to one level: shift a
    # level per round then.
    rounds_shift = len(names) % len(CYCLE) == 0
    for i in range(n):
        name = names[i % len(names)]
        step = i + (i // len(names) if rounds_shift else 0)
        lvl = CYCLE[step % len(CYCLE)] if level == MIXED else level
        out.append((name, seed + i, lvl))
    return out


def generate(
    family: str | Iterable[str] = "all",
    n: int = 8,
    seed: int = 0,
    difficulty: Difficulty | str = MIXED,
    progress: bool = False,
) -> list[Task]:
    """`n` tasks; see the module docstring for how families, seeds and difficulty cycle."""
    triples = plan(family, n, seed, difficulty)
    if progress:
        triples = tqdm(triples, desc="generate", unit="task")
    return [make_task(name, s, lvl) for name, s, lvl in triples]
