"""Terminal-Bench 1 task directories: read and write.

Layout (the directory name is the task id):

    task.yaml            instruction, difficulty, category, tags, max_agent_timeout_sec,
                         max_test_timeout_sec; other keys (author_email, parser_name, ...) are
                         kept in `Task.metadata`; a `tbrl:` mapping holds what TB1 has no key
                         for (title, use_case_category, image, other limits, created/updated)
    Dockerfile           the environment; every other top-level file is build context
    docker-compose.yaml  generated when standard; a custom one is kept as a context file
    run-tests.sh         the test script (a generated standard one reads back as "no script")
    tests/...            build-context files under tests/ (TB1's build context is the whole
                         directory) are listed in `tbrl.context_files_in_tests`; note that a
                         Dockerfile `COPY tests/` then also copies test_outputs.py into the image
    tests/test_outputs.py  pytest tests; other files in tests/ are test fixtures
    solution.sh          reference solution
    test_weights.json    {"test_name": weight} (this project's lineage)

Everything the `Task` holds fits, so a round trip is lossless; build-context files may be
binary (carried byte-exact), test fixtures are text. With `lenient=True`, test_weights.json
variants (numbers as text, keys without the `test_` prefix, comment entries) are mapped onto
the test functions or dropped, each with a note in the load report. Left out: TB1's
`solution.yaml` (command-list solutions) is reported as unsupported, not guessed at; old
`descriptions:` lists are read (the `base` entry is the instruction) but written as
`instruction:`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tbrl_lib.tasks.errors import TaskFormatError
from tbrl_lib.tasks.files import (
    check_file_tree,
    collect_tree,
    decode_utf8,
    dump_yaml,
    parse_yaml_mapping,
    read_text,
    write_files,
    write_text,
)
from tbrl_lib.tasks.model import Limits, Task
from tbrl_lib.tasks.standard_files import TB1_RUN_TESTS, tb1_compose
from tbrl_lib.tasks.task_dir import DirLayout, TaskHead, read_task_dir

# TB1's own defaults when task.yaml leaves the timeouts out
TB1_AGENT_TIMEOUT = 360.0
TB1_TEST_TIMEOUT = 60.0
RESERVED_KEYS = {
    "instruction",
    "difficulty",
    "category",
    "tags",
    "max_agent_timeout_sec",
    "max_test_timeout_sec",
    "tbrl",
}
OWN_FILES = {
    "task.yaml",
    "Dockerfile",
    "docker-compose.yaml",
    "run-tests.sh",
    "solution.sh",
    "test_weights.json",
    "tests",
}
LIMIT_KEYS = ("build_timeout_sec", "cpus", "memory_mb", "storage_mb", "pids", "allow_internet")
TBRL_KEYS = {
    "title",
    "use_case_category",
    "image",
    "created_at",
    "updated_at",
    "context_files_in_tests",
    *LIMIT_KEYS,
}
FIELD_NAMES = {
    "id": "directory name",
    "instruction": "task.yaml (instruction)",
    "difficulty": "task.yaml (difficulty)",
    "category": "task.yaml (category)",
    "tags": "task.yaml (tags)",
    "title": "task.yaml (tbrl.title)",
    "environment.dockerfile": "Dockerfile",
    "environment": "Dockerfile",
    "environment.files": "build-context files",
    "tests.pytest": "tests/test_outputs.py",
    "tests.weights": "test_weights.json",
    "tests.files": "tests/",
    "tests": "tests/test_outputs.py",
    "limits": "task.yaml (limits)",
    "metadata": "task.yaml",
}


def read_tb1_dir(root: Path, lenient: bool = False) -> Task:
    """Read one TB1 task directory; any problem is a `TaskFormatError` naming the file.
    `lenient` reads weights files that name tests loosely (see `files.parse_weights`)."""
    return read_task_dir(root, LAYOUT, lenient)


def _read_head(root: Path, loc: str) -> TaskHead:
    """task.yaml: TB1's own keys, the `tbrl:` mapping, and the rest as metadata."""
    config = parse_yaml_mapping(read_text(root / "task.yaml", loc, "task.yaml"), loc, "task.yaml")
    extra = {k: v for k, v in config.items() if k not in RESERVED_KEYS}
    instruction = config.get("instruction")
    if instruction is None:
        instruction = _instruction_from_descriptions(extra, loc)
    tbrl = config.get("tbrl") or {}
    if not isinstance(tbrl, dict):
        raise TaskFormatError(
            loc, "task.yaml (tbrl)", "is not a mapping", "write `tbrl:` as key: value lines"
        )
    unknown = sorted(set(tbrl) - TBRL_KEYS)
    if unknown:
        raise TaskFormatError(
            loc,
            "task.yaml (tbrl)",
            f"unknown keys {unknown}",
            f"use only {sorted(TBRL_KEYS)} there; put other values at the top level",
        )
    return TaskHead(
        fields={
            "instruction": instruction,
            "difficulty": config.get("difficulty", "medium"),
            "category": config.get("category", "general"),
            "tags": config.get("tags") or [],
            "title": tbrl.get("title"),
            "use_case_category": tbrl.get("use_case_category"),
        },
        limits={
            "agent_timeout_sec": config.get("max_agent_timeout_sec", TB1_AGENT_TIMEOUT),
            "test_timeout_sec": config.get("max_test_timeout_sec", TB1_TEST_TIMEOUT),
            **{key: tbrl[key] for key in LIMIT_KEYS if key in tbrl},
        },
        metadata=extra,
        image=tbrl.get("image"),
        created_at=tbrl.get("created_at"),
        updated_at=tbrl.get("updated_at"),
        context_in_tests=list(tbrl.get("context_files_in_tests") or []),
    )


def _read_context(root: Path, loc: str, head: TaskHead, dockerfile: str | None):
    """Every top-level file but TB1's own; a non-standard docker-compose.yaml is one too,
    and with no Dockerfile and no `tbrl.image` it may name the image."""
    image = head.image
    files, binary = collect_tree(root, loc, ".", exclude=OWN_FILES | {"solution.yaml"})
    compose_path = root / "docker-compose.yaml"
    if compose_path.exists():
        compose = read_text(compose_path, loc, "docker-compose.yaml")
        if dockerfile is None and image is None:
            image = _compose_image(compose, loc)
        if compose != tb1_compose(None if dockerfile else image):
            files["docker-compose.yaml"] = compose
    return files, binary, image


def _read_fixtures(
    root: Path, loc: str, head: TaskHead, env_files: dict, env_binary: dict
) -> dict[str, str]:
    """tests/ but test_outputs.py; what `tbrl.context_files_in_tests` lists moves to the
    build context, and the rest (the verifier's fixtures) must be text."""
    test_files, test_binary = collect_tree(
        root / "tests", loc, "tests", exclude={"test_outputs.py"}
    )
    for rel in head.context_in_tests:
        inside = rel.removeprefix("tests/")
        if inside in test_binary:
            env_binary[rel] = test_binary.pop(inside)
        elif inside in test_files:
            env_files[rel] = test_files.pop(inside)
        else:
            raise TaskFormatError(
                loc,
                "task.yaml (tbrl.context_files_in_tests)",
                f"lists {rel}, which is missing",
                f"create {root / rel} or remove it from the list",
            )
    for rel, data in sorted(test_binary.items()):
        decode_utf8(data, loc, f"tests/{rel}")
    return test_files


def _check_solution(root: Path, loc: str) -> None:
    if (root / "solution.yaml").exists():
        raise TaskFormatError(
            loc,
            "solution.yaml",
            "command-list solutions are not supported",
            "write the solution as a bash script, solution.sh",
        )


LAYOUT = DirLayout(
    source_format="tb1",
    dockerfile="Dockerfile",
    script="run-tests.sh",
    weights="test_weights.json",
    solution="solution.sh",
    field_names=FIELD_NAMES,
    no_image="file is missing (and no image is named)",
    no_tests=(
        "tests/test_outputs.py",
        "file is missing (and there is no run-tests.sh)",
        "create {pytest} with pytest test functions",
    ),
    standard_script=lambda: TB1_RUN_TESTS,
    read_head=_read_head,
    read_context=_read_context,
    read_fixtures=_read_fixtures,
    check_solution=_check_solution,
)


def write_tb1_dir(task: Task, out_dir: Path) -> Path:
    """Write `task` as `out_dir/<task.id>/`; returns that directory."""
    root = out_dir / task.id
    _check_writable(task)
    config: dict[str, Any] = {
        "instruction": task.instruction,
        "difficulty": task.difficulty.value,
        "category": task.category,
        "tags": list(task.tags),
        "max_agent_timeout_sec": task.limits.agent_timeout_sec,
        "max_test_timeout_sec": task.limits.test_timeout_sec,
        **task.metadata,
    }
    tbrl = _tbrl_block(task)
    if tbrl:
        config["tbrl"] = tbrl
    write_text(root / "task.yaml", dump_yaml(config))
    env = task.environment
    if env.dockerfile is not None:
        write_text(root / "Dockerfile", env.dockerfile)
    write_files(root, env.files)
    write_files(root, env.binary_files)
    if "docker-compose.yaml" not in env.files:
        write_text(root / "docker-compose.yaml", tb1_compose(None if env.dockerfile else env.image))
    tests = task.tests
    write_text(root / "run-tests.sh", tests.script if tests.script is not None else TB1_RUN_TESTS)
    if tests.pytest is not None:
        write_text(root / "tests" / "test_outputs.py", tests.pytest)
    write_files(root / "tests", tests.files)
    if tests.weights:
        write_text(
            root / "test_weights.json",
            json.dumps(tests.weights, indent=2, ensure_ascii=False) + "\n",
        )
    if task.solution is not None:
        write_text(root / "solution.sh", task.solution)
    return root


def _tbrl_block(task: Task) -> dict[str, Any]:
    block: dict[str, Any] = {}
    for key in ("title", "use_case_category"):
        if getattr(task, key) is not None:
            block[key] = getattr(task, key)
    if task.environment.image is not None:
        block["image"] = task.environment.image
    defaults = Limits()
    for key in LIMIT_KEYS:
        value = getattr(task.limits, key)
        if value != getattr(defaults, key):
            block[key] = value
    for key in ("created_at", "updated_at"):
        if getattr(task.provenance, key):
            block[key] = getattr(task.provenance, key)
    context = task.environment.context_files()
    in_tests = sorted(rel for rel in context if rel.split("/")[0] == "tests")
    if in_tests:
        block["context_files_in_tests"] = in_tests
    return block


def _check_writable(task: Task) -> None:
    clash = sorted(set(task.metadata) & RESERVED_KEYS)
    if clash:
        raise TaskFormatError(
            task.id,
            "metadata",
            f"keys {clash} collide with task.yaml's own keys",
            "rename these metadata keys",
        )
    for rel in task.environment.context_files():
        top = rel.split("/")[0]
        in_tests = rel.removeprefix("tests/") if top == "tests" else None
        if (
            top in OWN_FILES - {"docker-compose.yaml", "tests"}
            or rel == "solution.yaml"
            or in_tests == "test_outputs.py"
            or in_tests in task.tests.files
        ):
            raise TaskFormatError(
                task.id,
                f"environment.files ({rel})",
                "collides with a TB1 task file",
                "rename the build-context file, or write the task in Harbor layout",
            )
    tree = {
        **task.environment.context_files(),
        **{f"tests/{rel}": text for rel, text in task.tests.files.items()},
    }
    check_file_tree(tree, task.id, "environment.files + tests.files")
    if "test_outputs.py" in task.tests.files:
        raise TaskFormatError(
            task.id,
            "tests.files (test_outputs.py)",
            "collides with the pytest file",
            "rename the fixture file",
        )
    if (
        task.tests.script is None and not task.tests.pytest
    ):  # pragma: no cover - the model forbids it
        raise TaskFormatError(task.id, "tests", "no tests", "add pytest tests or a script")


def _instruction_from_descriptions(extra: dict[str, Any], loc: str) -> str:
    descriptions = extra.get("descriptions")
    if not isinstance(descriptions, list):
        raise TaskFormatError(
            loc,
            "task.yaml (instruction)",
            "key is missing",
            "add `instruction: |` followed by the task text",
        )
    rest = [d for d in descriptions if not (isinstance(d, dict) and d.get("key") == "base")]
    base = [d for d in descriptions if isinstance(d, dict) and d.get("key") == "base"]
    if not base or not isinstance(base[0].get("description"), str):
        raise TaskFormatError(
            loc,
            "task.yaml (descriptions)",
            "has no `key: base` entry with a description",
            "add `instruction: |` followed by the task text",
        )
    if rest:
        extra["descriptions"] = rest
    else:
        del extra["descriptions"]
    return base[0]["description"]


def _compose_image(compose: str, loc: str) -> str | None:
    config = parse_yaml_mapping(compose, loc, "docker-compose.yaml")
    client = (config.get("services") or {}).get("client") or {}
    image = client.get("image") if isinstance(client, dict) else None
    if isinstance(image, str) and not image.startswith("${") and "build" not in client:
        return image
    return None
