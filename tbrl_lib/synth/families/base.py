"""What every procedural family shares: the `Draft` a family returns, and how a draft
becomes a `Task`.

A family is a plain function `(rng, difficulty) -> Draft`. The draft holds the
substance (instruction, the files the agent finds under /app, extra build steps, pytest
source with its weights, a bash reference solution); `to_task` adds what is the same for
every family (base image, Dockerfile, id, limits, provenance). Generated data travels as
build-context files copied into the image, so builds never reach the network.

Left out: the registry of families and seeding (`tbrl_lib.synth.generate`).
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tbrl_lib.tasks.model import Difficulty, Environment, Limits, Provenance, Task, Tests

BASE_IMAGE = "ghcr.io/laude-institute/t-bench/python-3-13:20250620"
"""Every generated task starts from the Terminal-Bench Python image (an offline substitute
exists locally; see `tbrl_lib.docker.base_images`)."""

LEVEL = {Difficulty.easy: 0, Difficulty.medium: 1, Difficulty.hard: 2, Difficulty.extremely_hard: 3}
"""Difficulty as an integer, so families can scale counts with it."""


@dataclass
class Draft:
    """One family instance before it becomes a `Task`."""

    title: str
    instruction: str
    app_files: dict[str, str]
    """Files the agent finds, path relative to /app -> text."""
    tests: str
    """pytest source for /tests/test_outputs.py."""
    weights: dict[str, float]
    solution: str
    """bash reference solution, run in /app."""
    tags: list[str] = field(default_factory=list)
    build_steps: list[str] = field(default_factory=list)
    """Extra Dockerfile lines after the COPY (offline only: no apt, no pip)."""
    answers: dict[str, Any] = field(default_factory=dict)
    """The expected answers the tests check; recorded in metadata so diversity is testable."""
    slip: str | None = None
    """The family's typical mistake, as bash a weaker model would run instead of `solution`
    (the tests catch it); a warm start's slipping teacher runs it (`demos.demo_teachers`)."""


FamilyFn = Callable[[random.Random, Difficulty], Draft]


@dataclass(frozen=True)
class Family:
    name: str
    category: str
    make: FamilyFn
    description: str


def dockerfile(draft: Draft) -> str:
    lines = [f"FROM {BASE_IMAGE}", "WORKDIR /app"]
    if draft.app_files:
        lines.append("COPY app/ /app/")
    lines += draft.build_steps
    return "\n".join(lines) + "\n"


def to_task(family: Family, draft: Draft, seed: int, difficulty: Difficulty) -> Task:
    """Wrap a draft into a `Task` with a stable id `<family>-<difficulty>-s<seed>`."""
    level = LEVEL[difficulty]
    return Task(
        id=f"{family.name.replace('_', '-')}-{difficulty.value.replace('_', '-')}-s{seed}",
        instruction=draft.instruction.strip() + "\n",
        difficulty=difficulty,
        category=family.category,
        tags=["synthetic", family.name.replace("_", "-"), *draft.tags],
        title=draft.title,
        environment=Environment(
            dockerfile=dockerfile(draft),
            files={f"app/{path}": text for path, text in draft.app_files.items()},
        ),
        tests=Tests(pytest=draft.tests, weights=draft.weights),
        solution=draft.solution,
        limits=Limits(
            agent_timeout_sec=600.0 + 300.0 * level, test_timeout_sec=120.0, build_timeout_sec=300.0
        ),
        provenance=Provenance(source_format="synth", location=f"family {family.name} seed {seed}"),
        metadata={
            "synth": _without_none(
                {"family": family.name, "seed": seed, "answers": draft.answers, "slip": draft.slip}
            )
        },
    )


def _without_none(value: Any) -> Any:
    """Metadata travels through TOML (Harbor task.toml), which has no null."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_without_none(v) for v in value if v is not None]
    return value


def pytest_module(constants: dict[str, Any], body: str) -> str:
    """pytest source: the expected values as literals, then the (dedented) test body."""
    head = [
        '"""Checks for a generated task (tbrl synth); runs in the task container."""',
        "",
        "import json",
        "import os",
        "import subprocess",
        "from pathlib import Path",
        "",
    ]
    head += [f"{name} = {value!r}" for name, value in constants.items()]
    return "\n".join(head) + "\n\n" + textwrap.dedent(body).strip() + "\n"


def heredoc(path: str, text: str, marker: str = "TBRL_EOF") -> str:
    """A bash snippet that writes `text` to `path` verbatim."""
    if marker in text:
        raise ValueError(f"heredoc marker {marker} occurs in the text for {path}")
    return f"cat > {path} <<'{marker}'\n{text.rstrip()}\n{marker}\n"


def pick(rng: random.Random, pool: list[Any], k: int) -> list[Any]:
    return rng.sample(pool, min(k, len(pool)))


WORDS = [
    "amber",
    "birch",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nimbus",
    "onyx",
    "pebble",
    "quartz",
    "raven",
    "sierra",
    "tundra",
    "umber",
    "vertex",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
]
"""Neutral words for names (services, users, projects) so instances read differently."""
