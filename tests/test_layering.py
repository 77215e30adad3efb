"""The layers import downwards only, written once (`LAYERS`, lowest first): a module may import
its own package and the layers below it, never one beside or above it, at any depth (a
function-level import is still a dependency). A module that reaches up makes the ground floor
depend on everything above it (and on Docker, torch, the judge SDKs). Every package and
top-level module of `tbrl_lib` must have a layer, so a new one cannot slip past. Within a
layer too, no function-level import may close a cycle that module-level imports would not
allow (`hidden_cycles`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tbrl_lib"

LAYERS: list[set[str]] = [
    # where default paths resolve (the workspace root), and whether a person watches the kernel
    {"workspace", "frontend"},
    # a run's folder and summary.json (the notebooks' helpers re-export them), and a training
    # step's progress from its metrics.jsonl row (the console line and the notebook's panel)
    {"run_folder", "step_progress"},
    {
        "aio",
        "console",
        "engines",
        "pricing",
        "process_memory",
        "upstream",
        "overrides",
        "notebook_tools",
        "fake_llm_server",
        "slow_notice",
        "slurm",
        "trl_vllm",
    },  # fmt: skip
    {"llm_api"},  # the SDK clients and one Usage: policies, judges and synthesis call them
    {"tasks"},
    {"synth"},  # a task source: procedural families, the LLM pipeline
    {"docker"},  # the Docker toolkit: engine, base images, build log, reaper, tool containers
    {"sandbox", "policies"},
    {"agent"},
    {"models"},  # names -> models and policies: the tiny model's corpus renders agent prompts
    {"rewards", "viewers"},
    {"rollout"},
    {"evaluate"},
    {"harbor"},  # tbrl's agent inside Harbor: its runner writes evaluation's results.json
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
        "    from tbrl_lib.train.grpo.training import train\n"
        "    import tbrl_lib.cli\n"
    )
    assert imported_units(module) == {("upstream", 1), ("train", 3), ("cli", 4)}


# A function-level import of a tbrl_lib module is fine for a heavy optional library's sake
# (torch, the vendors' SDKs, papermill), never to hide a cycle: run at module level it would
# fail (or half-initialise a module), so the modules are tangled whatever the layers say.


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def modules_of(pkg: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under `pkg` (a package is its `__init__.py`)."""
    found = {}
    for path in pkg.rglob("*.py"):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def module_imports(path: Path, modules: dict[str, Path]) -> tuple[set[str], set[tuple[str, int]]]:
    """The modules of `modules` that `path` imports at module level, and (module, line) of
    those it imports inside a function. `from pkg import sub` names the submodule when there
    is one; imports under `if TYPE_CHECKING:` never run and count as neither."""

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                for a in node.names
            ]
        else:
            return []
        found = []
        for name in names:
            while name and name not in modules:  # `import a.b.c` where c is a name, not a module
                name = name.rpartition(".")[0]
            if name:
                found.append(name)
        return found

    top: set[str] = set()
    late: set[tuple[str, int]] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            inside = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            for target in targets(child):
                if inside:
                    late.add((target, child.lineno))
                else:
                    top.add(target)
            visit(child, inside)

    visit(ast.parse(path.read_text(), filename=str(path)), False)
    return top, late


def hidden_cycles(pkg: Path) -> list[str]:
    """Every function-level import under `pkg` whose module reaches back, through
    module-level imports alone, to the importer: `file:line: a -> b -> ... -> a`."""
    modules = modules_of(pkg)
    graph, late = {}, []
    for name, path in modules.items():
        graph[name], calls = module_imports(path, modules)
        late += [(name, target, line) for target, line in calls]

    def path_between(start: str, goal: str) -> list[str] | None:
        came_from: dict[str, str | None] = {start: None}
        pending = [start]
        while pending:
            node = pending.pop(0)
            if node == goal:
                chain = [node]
                while came_from[chain[-1]] is not None:
                    chain.append(came_from[chain[-1]])
                return chain[::-1]
            for nxt in sorted(graph.get(node, ())):
                if nxt not in came_from:
                    came_from[nxt] = node
                    pending.append(nxt)
        return None

    found = []
    for name, target, line in sorted(late):
        back = path_between(target, name)
        if back is not None:
            where = modules[name].relative_to(pkg.parent)
            found.append(f"{where}:{line}: {' -> '.join([name, *back])}")
    return found


def test_no_function_level_import_hides_a_cycle():
    found = hidden_cycles(PKG)
    assert not found, (
        "a late import closes a cycle; move what both need down, or pass it in:\n"
        + "\n".join(found)
    )


def test_the_cycle_check_sees_a_late_import_closing_a_loop(tmp_path):
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from p.sub.a import A\n")
    (pkg / "sub" / "a.py").write_text(
        "from p import heavy\n"
        "def build():\n"
        "    from p.sub import make\n"  # sub/__init__ imports a: a loop
        "    import p.heavy\n"  # heavy imports nothing of p: fine
        "A = 1\n"
    )
    (pkg / "heavy.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from p.sub.a import A\n"  # never runs: no arrow
    )
    assert hidden_cycles(pkg) == ["p/sub/a.py:3: p.sub.a -> p.sub -> p.sub.a"]


# A sandbox backend's SDK stays inside that backend (Docker's also in the Docker toolkit,
# `tbrl_lib/docker`): the rest of tbrl reaches Docker or Ray only through
# `tbrl_lib.sandbox`'s seam (`backend_for`, `Sandbox`) or the toolkit, so a new backend or a
# change of SDK touches one package.
CONFINED = {
    "docker": (PKG / "sandbox" / "backends" / "docker", PKG / "docker"),
    "ray": (PKG / "sandbox" / "backends" / "ray",),
}
"""Third-party package -> the only folders of tbrl_lib whose modules may import it."""


def absolute_imports(path: Path) -> list[tuple[str, int]]:
    """(module, line) of every absolute import in `path`, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
    return found


def sdk_imports(path: Path, sdk: str) -> list[int]:
    """Lines of `path` that import `sdk` or one of its modules, at any depth."""
    lines = {line for name, line in absolute_imports(path) if name.split(".")[0] == sdk}
    return sorted(lines)


def confinement_offenders(pkg: Path, sdk: str, homes: tuple[Path, ...]) -> list[str]:
    return [
        f"{path.relative_to(pkg.parent)}:{line} imports {sdk}"
        for path in sorted(pkg.rglob("*.py"))
        if not any(home in path.parents for home in homes)
        for line in sdk_imports(path, sdk)
    ]


@pytest.mark.parametrize("sdk", sorted(CONFINED))
def test_a_backend_sdk_is_imported_only_inside_its_backend(sdk):
    offenders = confinement_offenders(PKG, sdk, CONFINED[sdk])
    assert not offenders, "go through tbrl_lib.sandbox (backend_for) instead:\n" + "\n".join(
        offenders
    )


def test_a_backend_package_is_imported_only_by_the_sandbox_seam():
    """Outside `sandbox/backends/`, only the registry's face (`tbrl_lib/sandbox/__init__.py`)
    names a backend's package: everything else asks `backend_for` or the Docker toolkit."""
    backends = PKG / "sandbox" / "backends"
    offenders = [
        f"{path.relative_to(PKG.parent)}:{line} imports {name}"
        for path in sorted(PKG.rglob("*.py"))
        if backends not in path.parents and path != PKG / "sandbox" / "__init__.py"
        for name, line in absolute_imports(path)
        if name.startswith("tbrl_lib.sandbox.backends")
    ]
    assert not offenders, "\n".join(offenders)


def test_the_confinement_check_fails_on_an_import_outside_the_backend(tmp_path):
    pkg = tmp_path / "tbrl_lib"
    home = pkg / "sandbox" / "backends" / "docker"
    home.mkdir(parents=True)
    (home / "engine.py").write_text("import docker\nfrom docker.errors import NotFound\n")
    (pkg / "train").mkdir()
    (pkg / "train" / "outage.py").write_text(
        "import dockerfile_parse\n"  # another package whose name starts alike: fine
        "def f():\n"
        "    from docker.errors import DockerException\n"  # inside a function: still found
    )
    assert confinement_offenders(pkg, "docker", (home,)) == [
        "tbrl_lib/train/outage.py:3 imports docker"
    ]


# Inside `train`, the rooms stand in one order too (`tbrl_lib/train/__init__.py`): a room
# imports only those before it, so the spine (`grpo`) is the one room that sees them all.
TRAIN_ROOMS = [
    "config",
    "plan",
    "model",
    "vllm",
    "step",
    "report",
    "pipeline",
    "heldout",
    "warm_start",
    "grpo",
    "job",
]


def room_imports(path: Path) -> set[tuple[str, int]]:
    """(room of tbrl_lib.train, line) of every import in `path`, at any depth."""
    found = set()
    for module, line in absolute_imports(path):
        parts = module.split(".")
        if parts[:2] == ["tbrl_lib", "train"] and len(parts) > 2:
            found.add((parts[2], line))
    return found


def test_every_train_room_has_a_place_in_the_order():
    rooms = {p.name for p in (PKG / "train").iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(TRAIN_ROOMS), "give it a place in TRAIN_ROOMS"


@pytest.mark.parametrize("room", TRAIN_ROOMS)
def test_a_train_room_imports_only_the_rooms_before_it(room):
    later = set(TRAIN_ROOMS[TRAIN_ROOMS.index(room) + 1 :])
    offenders = [
        f"{path.relative_to(PKG.parent)}:{line} imports tbrl_lib.train.{other}"
        for path in sorted((PKG / "train" / room).rglob("*.py"))
        for other, line in sorted(room_imports(path))
        if other in later
    ]
    assert not offenders, "\n".join(offenders)
