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

from tbrl_lib.tasks.errors import TaskFormatError
from tbrl_lib.tasks.files import (
    check_file_tree,
    collect_files,
    collect_tree,
    parse_toml,
    read_text,
    write_files,
    write_text,
)
from tbrl_lib.tasks.model import Limits, Task
from tbrl_lib.tasks.standard_files import harbor_test_sh
from tbrl_lib.tasks.task_dir import DirLayout, TaskHead, read_task_dir

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


def read_harbor_dir(root: Path, lenient: bool = False) -> Task:
    """Read one Harbor task directory; any problem is a `TaskFormatError` naming the file.
    `lenient` reads weights files that name tests loosely (see `files.parse_weights`)."""
    return read_task_dir(root, LAYOUT, lenient)


def _read_head(root: Path, loc: str) -> TaskHead:
    """task.toml, taken apart into what tbrl models and the rest (kept under "harbor")."""
    rest = parse_toml(read_text(root / "task.toml", loc, "task.toml"), loc, "task.toml")
    if rest.get("version") == HARBOR_VERSION:  # tomllib returns a fresh dict: popped apart
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
    fields = {
        key: own[key]
        for key in ("difficulty", "category", "tags", "title", "use_case_category")
        if key in own
    }
    return TaskHead(
        fields={"instruction": read_text(root / "instruction.md", loc, "instruction.md"), **fields},
        limits=limits,
        metadata=meta,
        image=image,
        created_at=own.get("created_at"),
        updated_at=own.get("updated_at"),
    )


def _read_context(root: Path, loc: str, head: TaskHead, dockerfile: str | None):
    text, binary = collect_tree(root / "environment", loc, "environment", exclude={"Dockerfile"})
    return text, binary, head.image


def _read_fixtures(root: Path, loc: str, head: TaskHead, env_text, env_binary) -> dict[str, str]:
    return collect_files(root / "tests", loc, "tests", exclude=TEST_OWN_FILES)


def _check_solution(root: Path, loc: str) -> None:
    extra = sorted(set(collect_files(root / "solution", loc, "solution", exclude={"solve.sh"})))
    if extra:
        raise TaskFormatError(
            loc,
            f"solution/{extra[0]}",
            "files besides solve.sh are not supported",
            "fold them into solution/solve.sh (e.g. with a heredoc)",
        )


LAYOUT = DirLayout(
    source_format="harbor",
    dockerfile="environment/Dockerfile",
    script="tests/test.sh",
    weights="tests/test_weights.json",
    solution="solution/solve.sh",
    field_names=FIELD_NAMES,
    no_image="file is missing (and task.toml names no [environment] docker_image)",
    no_tests=(
        "tests/test.sh",
        "file is missing (and there is no tests/test_outputs.py)",
        "create {script} (or pytest tests in {pytest})",
    ),
    standard_script=harbor_test_sh,
    read_head=_read_head,
    read_context=_read_context,
    read_fixtures=_read_fixtures,
    check_solution=_check_solution,
)


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
