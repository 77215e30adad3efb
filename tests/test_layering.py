"""The layers import downwards only: a module that reaches up makes the ground floor depend
on everything above it (and on Docker, torch, the judge SDKs) and breaks the one-way flow
tasks -> sandbox -> agent -> rewards -> rollout -> train / evaluate."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tbrl_lib"

ABOVE = {
    "tasks": (
        "sandbox",
        "agent",
        "policies",
        "rewards",
        "rollout",
        "synth",
        "train",
        "evaluate",
        "judge_eval",
    ),
    "sandbox": (
        "agent",
        "policies",
        "rewards",
        "rollout",
        "synth",
        "train",
        "evaluate",
        "judge_eval",
    ),
    "models": (
        "sandbox",
        "agent",
        "rewards",
        "rollout",
        "synth",
        "train",
        "evaluate",
        "judge_eval",
    ),
    "rollout": ("train", "evaluate", "synth", "judge_eval"),
    "rewards": ("rollout", "train", "evaluate", "synth"),
}
"""Package -> the packages none of its modules may import, at any depth (function-level
imports included: a lazy import is still a dependency)."""


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_a_layer_imports_nothing_above_it(package):
    offenders = []
    for path in sorted((PKG / package).rglob("*.py")):
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "tbrl_lib" and len(parts) > 1 and parts[1] in ABOVE[package]:
                offenders.append(f"{path.relative_to(PKG.parent)} imports {module}")
    assert not offenders, "\n".join(offenders)
