"""Harbor task directories (Terminal-Bench 2 and most current agent-RL frameworks).

Layout (the directory name is the task id; see docs/INTERFACES):

    task.toml              [metadata] difficulty, category, tags, title, use_case_category,
                           created_at, updated_at, plus `Task.metadata` entries;
                           [metadata.tbrl] what Harbor has no key for (pids);
                           [verifier]/[agent] timeout_sec; [environment] build_timeout_sec,
                           cpus, memory_mb, storage_mb, allow_internet, docker_image
    instruction.md         the instruction, exactly
    environment/Dockerfile + build-context files
    tests/test.sh          verifier script; a standard one is generated for pytest tasks
    tests/test_outputs.py  pytest tests; tests/test_weights.json weights; other files: fixtures
    solution/solve.sh      reference solution

task.toml keys tbrl does not model (e.g. `[verifier] env`, a `[task]` table) are kept in
`Task.metadata["harbor"]` and written back, so nothing is lost. Files under `environment/`
may be binary (data files, images, archives: carried byte-exact). Left out: extra files under
`solution/` (reported as unsupported, since the Task's solution is one script) and binary
files under `tests/` (reported as non-UTF-8). TOML has no null, so metadata holding None
cannot be written. With `lenient=True`, weights are read as `files.parse_weights` describes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from tbrl_lib.tasks.errors import TaskFormatError, from_validation_error
from tbrl_lib.tasks.files import (
    check_file_tree,
    collect_files,
    collect_tree,
    parse_json_object,
    parse_toml,
    parse_weights,
    read_text,
    write_files,
    write_text,
)
from tbrl_lib.tasks.model import Limits, Task, test_function_names
from tbrl_lib.tasks.standard_files import harbor_test_sh

HARBOR_VERSION = "1.0"
METADATA_KEYS = (
    "difficulty",
    "category",
    "tags",
    "title",
    "use_case_category",
    "created_at",
    "updated_at",
)
RESERVED_METADATA = set(METADATA_KEYS) | {"tbrl", "harbor"}
ENV_KEYS = {
    "build_timeout_sec": "build_timeout_sec",
    "cpus": "cpus",
    "memory_mb": "memory_mb",
    "storage_mb": "storage_mb",
    "allow_internet": "allow_internet",
}
TEST_OWN_FILES = {"test.sh", "test_outputs.py", "test_weights.json"}
FIELD_NAMES = {
    "id": "directory name",
    "instruction": "instruction.md",
    "difficulty": "task.toml (metadata.difficulty)",
    "category": "task.toml (metadata.category)",
    "tags": "task.toml (metadata.tags)",
    "title": "task.toml (metadata.title)",
    "environment.dockerfile": "environment/Dockerfile",
    "environment": "environment/Dockerfile",
    "environment.files": "environment/",
    "tests.pytest": "tests/test_outputs.py",
    "tests.weights": "tests/test_weights.json",
    "tests.files": "tests/",
    "tests": "tests/",
    "limits": "task.toml",
    "metadata": "task.toml (metadata)",
}


def is_harbor_dir(path: Path) -> bool:
    return (path / "task.toml").is_file()


def read_harbor_dir(root: Path, lenient: bool = False) -> Task:
    """Read one Harbor task directory; any problem is a `TaskFormatError` naming the file.
    `lenient` reads weights files that name tests loosely (see `files.parse_weights`)."""
    loc = str(root)
    config = parse_toml(read_text(root / "task.toml", loc, "task.toml"), loc, "task.toml")
    rest = config  # tomllib returns a fresh dict; popped apart below
    if rest.get("version") == HARBOR_VERSION:
        del rest["version"]
    meta = _pop_table(rest, "metadata", loc)
    verifier = _pop_table(rest, "verifier", loc)
    agent = _pop_table(rest, "agent", loc)
    env = _pop_table(rest, "environment", loc)
    own = {key: meta.pop(key) for key in METADATA_KEYS if key in meta}
    tbrl = meta.pop("tbrl", {})
    limits: dict[str, Any] = {key: env.pop(src) for src, key in ENV_KEYS.items() if src in env}
    if "timeout_sec" in verifier:
        limits["test_timeout_sec"] = verifier.pop("timeout_sec")
    if "timeout_sec" in agent:
        limits["agent_timeout_sec"] = agent.pop("timeout_sec")
    unknown = sorted(set(tbrl) - {"pids"}) if isinstance(tbrl, dict) else ["(not a table)"]
    if unknown:
        raise TaskFormatError(
            loc,
            "task.toml (metadata.tbrl)",
            f"unknown keys {unknown}",
            "tbrl reads only `pids` there; move other values to [metadata]",
        )
    if "pids" in tbrl:
        limits["pids"] = tbrl["pids"]
    image = env.pop("docker_image", None)
    leftovers = {
        name: table
        for name, table in (("verifier", verifier), ("agent", agent), ("environment", env))
        if table
    }
    leftovers.update(rest)
    if leftovers:
        meta["harbor"] = leftovers

    env_dir = root / "environment"
    dockerfile_path = env_dir / "Dockerfile"
    dockerfile = (
        read_text(dockerfile_path, loc, "environment/Dockerfile")
        if dockerfile_path.exists()
        else None
    )
    if dockerfile is None and image is None:
        raise TaskFormatError(
            loc,
            "environment/Dockerfile",
            "file is missing (and task.toml names no [environment] docker_image)",
            f"create {dockerfile_path}",
        )
    tests_dir = root / "tests"
    pytest_path, script_path = tests_dir / "test_outputs.py", tests_dir / "test.sh"
    pytest = read_text(pytest_path, loc, "tests/test_outputs.py") if pytest_path.exists() else None
    script = read_text(script_path, loc, "tests/test.sh") if script_path.exists() else None
    if pytest is None and script is None:
        raise TaskFormatError(
            loc,
            "tests/test.sh",
            "file is missing (and there is no tests/test_outputs.py)",
            f"create {script_path} (or pytest tests in {pytest_path})",
        )
    if script == harbor_test_sh() and pytest is not None:
        script = None
    weights: dict[str, float] = {}
    notes = []
    weights_path = tests_dir / "test_weights.json"
    if weights_path.exists():
        raw = parse_json_object(
            read_text(weights_path, loc, "tests/test_weights.json"),
            loc,
            "tests/test_weights.json",
            'write {"test_name": weight, ...}',
        )
        names = test_function_names(pytest) if pytest else None
        weights, notes = parse_weights(raw, loc, "tests/test_weights.json", names, lenient)
    solution_dir = root / "solution"
    extra_solution = sorted(set(collect_files(solution_dir, loc, "solution", exclude={"solve.sh"})))
    if extra_solution:
        raise TaskFormatError(
            loc,
            f"solution/{extra_solution[0]}",
            "files besides solve.sh are not supported",
            "fold them into solution/solve.sh (e.g. with a heredoc)",
        )
    solve_path = solution_dir / "solve.sh"
    env_text, env_binary = collect_tree(env_dir, loc, "environment", exclude={"Dockerfile"})
    data: dict[str, Any] = {
        "id": root.name,
        "instruction": read_text(root / "instruction.md", loc, "instruction.md"),
        **{
            key: own[key]
            for key in ("difficulty", "category", "tags", "title", "use_case_category")
            if key in own
        },
        "environment": {
            "dockerfile": dockerfile,
            "image": image,
            "files": env_text,
            "binary_files": env_binary,
        },
        "tests": {
            "pytest": pytest,
            "script": script,
            "weights": weights,
            "files": collect_files(tests_dir, loc, "tests", exclude=TEST_OWN_FILES),
        },
        "solution": read_text(solve_path, loc, "solution/solve.sh")
        if solve_path.exists()
        else None,
        "limits": limits,
        "provenance": {
            "source_format": "harbor",
            "location": loc,
            "notes": notes,
            "created_at": own.get("created_at"),
            "updated_at": own.get("updated_at"),
        },
        "metadata": meta,
    }
    try:
        return Task.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, loc, FIELD_NAMES) from None


def write_harbor_dir(task: Task, out_dir: Path) -> Path:
    """Write `task` as `out_dir/<task.id>/`; returns that directory."""
    root = out_dir / task.id
    write_text(root / "task.toml", task_toml(task))
    write_text(root / "instruction.md", task.instruction)
    env = task.environment
    if env.dockerfile is not None:
        write_text(root / "environment" / "Dockerfile", env.dockerfile)
    write_files(root / "environment", env.files)
    write_files(root / "environment", env.binary_files)
    tests = task.tests
    write_text(
        root / "tests" / "test.sh", tests.script if tests.script is not None else harbor_test_sh()
    )
    if tests.pytest is not None:
        write_text(root / "tests" / "test_outputs.py", tests.pytest)
    if tests.weights:
        write_text(
            root / "tests" / "test_weights.json",
            json.dumps(tests.weights, indent=2, ensure_ascii=False) + "\n",
        )
    write_files(root / "tests", tests.files)
    if task.solution is not None:
        write_text(root / "solution" / "solve.sh", task.solution)
    return root


def task_toml(task: Task) -> str:
    """The task.toml text for `task` (raises `TaskFormatError` for what TOML cannot hold)."""
    _check_writable(task)
    meta: dict[str, Any] = {
        "difficulty": task.difficulty.value,
        "category": task.category,
        "tags": list(task.tags),
    }
    for key in ("title", "use_case_category"):
        if getattr(task, key) is not None:
            meta[key] = getattr(task, key)
    for key in ("created_at", "updated_at"):
        if getattr(task.provenance, key):
            meta[key] = getattr(task.provenance, key)
    meta.update({k: v for k, v in task.metadata.items() if k != "harbor"})
    if task.limits.pids != Limits().pids:
        meta["tbrl"] = {"pids": task.limits.pids}
    limits = task.limits
    env: dict[str, Any] = {
        key: getattr(limits, key) for key in ENV_KEYS.values() if getattr(limits, key) is not None
    }
    if task.environment.image is not None:
        env["docker_image"] = task.environment.image
    doc: dict[str, Any] = {
        "version": HARBOR_VERSION,
        "metadata": meta,
        "verifier": {"timeout_sec": limits.test_timeout_sec},
        "agent": {"timeout_sec": limits.agent_timeout_sec},
        "environment": env,
    }
    for name, table in (task.metadata.get("harbor") or {}).items():
        if isinstance(table, dict) and isinstance(doc.get(name), dict):
            doc[name] = {**doc[name], **table}
        else:
            doc[name] = table
    try:
        return tomli_w.dumps(doc)
    except (TypeError, ValueError) as exc:
        raise TaskFormatError(
            task.id,
            "metadata",
            f"cannot be written as TOML: {exc}",
            "use strings, numbers, booleans, lists and tables (TOML has no null)",
        ) from None


def _check_writable(task: Task) -> None:
    clash = sorted(set(task.metadata) & (RESERVED_METADATA - {"harbor"}))
    if clash:
        raise TaskFormatError(
            task.id,
            "metadata",
            f"keys {clash} collide with task.toml [metadata] keys",
            "rename these metadata keys",
        )
    harbor = task.metadata.get("harbor")
    if harbor is not None and not isinstance(harbor, dict):
        raise TaskFormatError(
            task.id,
            "metadata (harbor)",
            "must be a table of task.toml sections",
            'use {"verifier": {"env": {...}}} style values',
        )
    check_file_tree(task.environment.context_files(), task.id, "environment.files")
    check_file_tree(task.tests.files, task.id, "tests.files")
    clash = sorted(set(task.tests.files) & TEST_OWN_FILES)
    if clash:
        raise TaskFormatError(
            task.id,
            f"tests.files ({clash[0]})",
            "collides with a Harbor tests/ file",
            "rename the fixture file",
        )
    if "Dockerfile" in task.environment.context_files():
        raise TaskFormatError(
            task.id,
            "environment.files (Dockerfile)",
            "collides with environment/Dockerfile",
            "put the Dockerfile text in environment.dockerfile",
        )


def _pop_table(doc: dict[str, Any], name: str, loc: str) -> dict[str, Any]:
    table = doc.pop(name, {})
    if not isinstance(table, dict):
        raise TaskFormatError(
            loc, f"task.toml ({name})", "is not a table", f"write it as a [{name}] section"
        )
    return table
