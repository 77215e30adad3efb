"""The layers import downwards only, written once (`LAYERS`, lowest first): a module may import
its own package and the layers below it, never one beside or above it, at any depth (a
function-level import is still a dependency). A module that reaches up makes the ground floor
depend on everything above it (and on Docker, torch, the judge SDKs). Every package and
top-level module of `tbrl_lib` must have a layer, so a new one cannot slip past."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tbrl_lib"

LAYERS: list[set[str]] = [
    {
        "aio",
        "console",
        "pricing",
        "upstream",
        "overrides",
        "notebook_tools",
        "testing",
        "slow_notice",
    },  # fmt: skip
    {"llm_api"},  # the SDK clients and one Usage: policies, judges and synthesis call them
    {"tasks"},
    {"synth"},  # a task source: procedural families, the LLM pipeline
    {"sandbox", "policies"},
    {"agent"},
    {"models"},  # names -> models and policies: the tiny model's corpus renders agent prompts
    {"rewards", "metrics"},
    {"rollout"},
    {"evaluate"},
    {"judge_eval", "train", "doctor"},
    {"cli"},
]
"""The one layer order (README, "Layout"); `tbrl_lib/__init__.py` (REPO_ROOT, the version) is
below them all."""
LAYER_OF = {unit: floor for floor, units in enumerate(LAYERS) for unit in units}


def units() -> list[str]:
    """Every package and top-level module of tbrl_lib (`tasks`, `cli`, `overrides`, ...)."""
    found = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    found |= {p.stem for p in PKG.glob("*.py") if p.name != "__init__.py"}
    return sorted(found)


def imported_units(path: Path) -> set[tuple[str, int]]:
    """(unit of tbrl_lib, line) of every import in `path`, top-level or inside a function."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module == "tbrl_lib":  # `from tbrl_lib import upstream, REPO_ROOT`
                modules = [f"tbrl_lib.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "tbrl_lib" and len(parts) > 1 and parts[1] in LAYER_OF:
                found.add((parts[1], node.lineno))
    return found


def test_every_package_and_module_has_a_layer():
    assert set(units()) - set(LAYER_OF) == set(), "give it a layer in LAYERS"


@pytest.mark.parametrize("unit", units())
def test_a_layer_imports_nothing_beside_or_above_it(unit):
    root = PKG / unit
    paths = sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]
    offenders = [
        f"{path.relative_to(PKG.parent)}:{line} imports tbrl_lib.{other}"
        for path in paths
        for other, line in sorted(imported_units(path))
        if other != unit and LAYER_OF[other] >= LAYER_OF[unit]
    ]
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_function_level_and_package_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from tbrl_lib import upstream\n"
        "def f():\n"
        "    from tbrl_lib.train.run import train\n"
        "    import tbrl_lib.cli\n"
    )
    assert imported_units(module) == {("upstream", 1), ("train", 3), ("cli", 4)}
