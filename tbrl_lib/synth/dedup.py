"""Near-duplicate detection and the category x difficulty balance of a task set.

Similarity of two tasks is a weighted mean of the Jaccard similarities of word shingles
of three parts: the instruction, the tests, and the environment (Dockerfile + build-context
files). Comparing every pair does not scale, so candidates come from MinHash signatures
banded into LSH buckets per part (numpy, no model hub); only candidates get an exact
Jaccard. Procedural instances of one family share their instruction and test templates
but not their data, so the environment part keeps them apart; a re-worded copy of the
same task shares data and tests and is caught.

Left out: semantic (embedding) similarity; it needs a model we cannot download here.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from tbrl_lib.tasks.model import Difficulty, Task

PRIME = (1 << 31) - 1
TOKEN = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class DedupConfig:
    """How near is too near."""

    threshold: float = 0.8
    """Weighted similarity at or above which two tasks are near-duplicates (0..1)."""
    shingle_words: int = 4
    """Words per shingle."""
    weights: dict[str, float] = field(
        default_factory=lambda: {"instruction": 0.4, "tests": 0.3, "environment": 0.3}
    )
    """Weight of each part in the similarity; parts: instruction, tests, environment."""
    num_perm: int = 64
    """MinHash permutations; `bands` must divide it."""
    bands: int = 16
    seed: int = 1

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.num_perm % self.bands:
            raise ValueError(f"bands ({self.bands}) must divide num_perm ({self.num_perm})")
        unknown = set(self.weights) - set(PARTS)
        if unknown or sum(self.weights.values()) <= 0:
            raise ValueError(
                f"weights must name parts from {PARTS} with a positive sum, got {self.weights}"
            )


PARTS = ("instruction", "tests", "environment")


@dataclass(frozen=True)
class DuplicatePair:
    a: str
    b: str
    score: float
    parts: dict[str, float]


def task_parts(task: Task) -> dict[str, str]:
    env = task.environment
    env_text = (
        (env.dockerfile or env.image or "")
        + "\n"
        + "\n".join(f"{path}\n{text}" for path, text in sorted(env.files.items()))
    )
    tests = (task.tests.pytest or "") + "\n" + (task.tests.script or "")
    return {"instruction": task.instruction, "tests": tests, "environment": env_text}


def shingles(text: str, k: int = 4) -> set[int]:
    """64-bit hashes of the k-word shingles of `text` (lower-cased word tokens)."""
    words = TOKEN.findall(text.lower())
    grams = [" ".join(words[i : i + k]) for i in range(max(1, len(words) - k + 1))] if words else []
    return {
        int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little") for g in grams
    }


def jaccard(a: set[int], b: set[int]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class MinHasher:
    def __init__(self, num_perm: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.a = rng.integers(1, PRIME, size=num_perm, dtype=np.uint64)
        self.b = rng.integers(0, PRIME, size=num_perm, dtype=np.uint64)

    def signature(self, hashes: set[int]) -> np.ndarray:
        if not hashes:
            return np.full(len(self.a), PRIME, dtype=np.uint64)
        x = np.fromiter((h % PRIME for h in hashes), dtype=np.uint64, count=len(hashes))
        return ((self.a[:, None] * x[None, :] + self.b[:, None]) % PRIME).min(axis=1)


def near_duplicates(tasks: list[Task], config: DedupConfig | None = None) -> list[DuplicatePair]:
    """Pairs of tasks whose weighted similarity reaches `config.threshold`, most similar first."""
    config = config or DedupConfig()
    sets = [
        {part: shingles(text, config.shingle_words) for part, text in task_parts(t).items()}
        for t in tasks
    ]
    hasher = MinHasher(config.num_perm, config.seed)
    rows = config.num_perm // config.bands
    candidates: set[tuple[int, int]] = set()
    for part in PARTS:
        if not config.weights.get(part):
            continue
        buckets: dict[tuple, list[int]] = defaultdict(list)
        for i, parts in enumerate(sets):
            sig = hasher.signature(parts[part])
            for band in range(config.bands):
                buckets[(band, sig[band * rows : (band + 1) * rows].tobytes())].append(i)
        for members in buckets.values():
            candidates.update(combinations(members, 2))
    total = sum(config.weights.values())
    pairs = []
    for i, j in sorted(candidates):
        sims = {p: jaccard(sets[i][p], sets[j][p]) for p in PARTS if config.weights.get(p)}
        score = sum(config.weights[p] * s for p, s in sims.items()) / total
        if score >= config.threshold:
            pairs.append(
                DuplicatePair(
                    tasks[i].id,
                    tasks[j].id,
                    round(score, 4),
                    {p: round(s, 4) for p, s in sims.items()},
                )
            )
    return sorted(pairs, key=lambda p: -p.score)


def most_similar(
    candidate: Task, existing: list[Task], part: str = "instruction", k: int = 4
) -> tuple[str | None, float]:
    """The existing task whose `part` is closest to the candidate's, and that similarity."""
    mine = shingles(task_parts(candidate)[part], k)
    best: tuple[str | None, float] = (None, 0.0)
    for other in existing:
        sim = jaccard(mine, shingles(task_parts(other)[part], k))
        if sim > best[1]:
            best = (other.id, sim)
    return best


def balance_table(tasks: list[Task]) -> pd.DataFrame:
    """Counts per category (rows) and difficulty (columns), with totals."""
    order = [d.value for d in Difficulty]
    frame = pd.DataFrame(
        {"category": [t.category for t in tasks], "difficulty": [t.difficulty.value for t in tasks]}
    )
    table = pd.crosstab(frame["category"], frame["difficulty"], margins=True, margins_name="total")
    cols = [c for c in order if c in table.columns] + ["total"]
    return table[cols] if len(tasks) else table


def balance_report(tasks: list[Task]) -> dict:
    """Headline balance numbers: shares per category/difficulty and the max/min ratio."""
    if not tasks:
        return {"tasks": 0, "categories": {}, "difficulties": {}, "imbalance_ratio": None}
    cats = pd.Series([t.category for t in tasks]).value_counts()
    diffs = pd.Series([t.difficulty.value for t in tasks]).value_counts()
    return {
        "tasks": len(tasks),
        "categories": {k: round(v / len(tasks), 4) for k, v in cats.items()},
        "difficulties": {k: round(v / len(tasks), 4) for k, v in diffs.items()},
        "imbalance_ratio": round(float(cats.max() / cats.min()), 3),
    }


def pairs_frame(pairs: list[DuplicatePair]) -> pd.DataFrame:
    """Near-duplicate pairs as a table (one column per part's similarity)."""
    return pd.DataFrame(
        [{"a": p.a, "b": p.b, "score": p.score, **p.parts} for p in pairs],
        columns=["a", "b", "score", *PARTS],
    )
