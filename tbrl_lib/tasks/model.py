"""The `Task`: one terminal task, whatever format it came from.

Every reader in `tbrl_lib.tasks` produces a `Task`; every writer consumes one. A round
trip through a format loses nothing that format can hold. The model validates itself:
a task that exists is a task that can be built and scored (Dockerfile has a FROM, weights
name real tests, instruction is not empty). Weights are per test function; they need not
sum to 1 (`normalized_weights` does that), but they must be non-negative with a positive
sum.

Ids are as permissive as the directory formats (upper case, `_`, `+`, `@`, ...: any
directory name without whitespace, a path separator or a control character). Where a
stricter name is needed (Docker image tags, file names tbrl invents) use `Task.safe_id`, which is the id
itself when it is already Docker-safe and otherwise a lower-case slug plus a short hash of
the original; the original id is what every writer writes back.

Build-context files are text (`Environment.files`) or bytes (`Environment.binary_files`:
Parquet, images, archives), carried byte-exact; JSON holds bytes as base64. Binary files of
one task may total at most `MAX_BINARY_BYTES`.
"""

from __future__ import annotations

import ast
import base64
import binascii
import functools
import hashlib
import json
import re
import threading
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    field_validator,
    model_validator,
)

MAX_ID_CHARS = 200
ID_FORBIDDEN = re.compile(r"[\s/\\\x00-\x1f\x7f]")
"""Characters no task id may hold: whitespace, path separators and control characters."""
DOCKER_SAFE_ID = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
"""A Docker repository path component (lower case; separators never doubled or at the ends)."""
MAX_BINARY_BYTES = 32 * 1024 * 1024
"""Cap on the binary build-context files of one task (they travel in every format)."""


def _bytes_from_base64(value: Any) -> Any:
    """Bytes stay bytes; text is base64 (how JSON, CSV and Parquet columns carry bytes)."""
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"binary content given as text must be base64 ({exc})") from None
    return value


Base64Bytes = Annotated[
    bytes,
    BeforeValidator(_bytes_from_base64),
    PlainSerializer(
        lambda data: base64.b64encode(data).decode("ascii"), return_type=str, when_used="json"
    ),
]


class Difficulty(str, Enum):
    easy = "easy"
    medium = "medium"
    hard = "hard"
    extremely_hard = "extremely_hard"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Environment(_Strict):
    """How to get the container: a Dockerfile (+ build-context files) or a ready image."""

    dockerfile: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    """Build-context files, relative path -> text content (upstream `additional_files`)."""
    binary_files: dict[str, Base64Bytes] = Field(default_factory=dict)
    """Build-context files that are not UTF-8 text, relative path -> bytes (base64 in JSON)."""
    image: str | None = None
    """A prebuilt image to use instead of building (e.g. a Harbor `docker_image`)."""

    @model_validator(mode="after")
    def _needs_a_source(self) -> Environment:
        if not self.dockerfile and not self.image:
            raise ValueError("environment needs a dockerfile or an image")
        if self.dockerfile is not None and not _has_from(self.dockerfile):
            raise ValueError("environment.dockerfile has no FROM instruction")
        for path in [*self.files, *self.binary_files]:
            _check_relative_path(path, "environment.files")
        both = sorted(set(self.files) & set(self.binary_files))
        if both:
            raise ValueError(f"environment.files: {both[0]!r} is both a text and a binary file")
        text = sorted(path for path, data in self.binary_files.items() if _is_utf8(data))
        if text:
            raise ValueError(
                f"environment.files: {text[0]!r} is UTF-8 text; put it in `files`, "
                "not `binary_files` (readers classify files by content)"
            )
        total = sum(len(data) for data in self.binary_files.values())
        if total > MAX_BINARY_BYTES:
            raise ValueError(
                f"environment.files: binary files total {total:,} bytes, over the "
                f"cap of {MAX_BINARY_BYTES:,}"
            )
        return self

    def context_files(self) -> dict[str, bytes]:
        """Every build-context file as bytes, text and binary together, sorted by path."""
        merged = {path: text.encode() for path, text in self.files.items()}
        merged.update(self.binary_files)
        return dict(sorted(merged.items()))


class Tests(_Strict):
    """What the verifier runs after the episode. The agent never sees these."""

    pytest: str | None = None
    """Source of tests/test_outputs.py (pytest functions `def test_*`)."""
    script: str | None = None
    """A shell test script (TB1 run-tests.sh or Harbor tests/test.sh)."""
    files: dict[str, str] = Field(default_factory=dict)
    """Extra files copied next to the tests (fixtures, expected outputs)."""
    weights: dict[str, float] = Field(default_factory=dict)
    """Test function name -> weight. Empty means every test weighs the same."""

    @model_validator(mode="after")
    def _check(self) -> Tests:
        if not self.pytest and not self.script:
            raise ValueError("tests need pytest source or a test script")
        if self.pytest and not test_function_names(self.pytest):
            raise ValueError("tests.pytest defines no test functions, so every run would score 0")
        for path in self.files:
            _check_relative_path(path, "tests.files")
        if self.weights:
            bad = {k: v for k, v in self.weights.items() if not v >= 0}
            if bad:
                raise ValueError(f"tests.weights must be non-negative, got {bad}")
            if sum(self.weights.values()) <= 0:
                raise ValueError("tests.weights must sum to a positive number")
            if self.pytest:
                names = set(test_function_names(self.pytest))
                unknown = sorted(set(self.weights) - names)
                if unknown:
                    raise ValueError(
                        f"tests.weights name tests that do not exist: {unknown}; "
                        f"tests defined: {sorted(names)}"
                    )
        return self

    def test_names(self) -> list[str]:
        return test_function_names(self.pytest) if self.pytest else sorted(self.weights)

    def normalized_weights(self) -> dict[str, float]:
        """Weights summing to 1 over every test; equal weights when none are given."""
        if self.weights:
            total = sum(self.weights.values())
            return {name: w / total for name, w in self.weights.items()}
        names = self.test_names()
        return {name: 1.0 / len(names) for name in names} if names else {}


class Limits(_Strict):
    """Time and resource limits. Timeouts in seconds; None means the tbrl default."""

    agent_timeout_sec: float = Field(default=900.0, gt=0)
    test_timeout_sec: float = Field(default=180.0, gt=0)
    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float = Field(default=1.0, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    pids: int = Field(default=512, gt=0)
    allow_internet: bool = False


class LoadNote(_Strict):
    """One thing a lenient reader did to a task's source: which field, what, and the fix."""

    field: str
    problem: str
    fix: str


class Provenance(_Strict):
    """Where the task came from, so errors and reports can point back to it."""

    source_format: str = "python"
    location: str = ""
    """File path, directory, or `file.csv:row 12`."""
    created_at: str | None = None
    updated_at: str | None = None
    notes: list[LoadNote] = Field(default_factory=list)
    """What a lenient reader changed or left out to load the task (reported, never silent)."""


class Task(_Strict):
    id: str
    """The task's name as its source spells it (a directory name, a CSV `task_id`)."""
    instruction: str
    difficulty: Difficulty = Difficulty.medium
    category: str = "general"
    tags: list[str] = Field(default_factory=list)
    title: str | None = None
    use_case_category: str | None = None
    environment: Environment
    tests: Tests
    solution: str | None = None
    """Reference solution as a bash script (TB1 solution.sh / Harbor solution/solve.sh)."""
    limits: Limits = Field(default_factory=Limits)
    provenance: Provenance = Field(default_factory=Provenance)
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything a format carries that has no field here (kept for lossless round trips)."""

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        check_task_id(value)
        return value

    @property
    def safe_id(self) -> str:
        """A Docker- and file-name-safe form of the id (see the module docstring)."""
        return safe_task_id(self.id)

    @field_validator("instruction")
    @classmethod
    def _instruction_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("instruction is empty")
        return value

    @field_validator("tags")
    @classmethod
    def _tags_clean(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not tag or tag != tag.strip() or "|" in tag:
                raise ValueError(f"tag {tag!r} is empty, padded or contains '|'")
        return value

    def content_hash(self) -> str:
        """Stable hash of everything that defines the task (not where it came from)."""
        payload = self.model_dump(mode="json", exclude={"provenance"})
        if not payload["environment"]["binary_files"]:
            del payload["environment"]["binary_files"]  # text-only tasks keep their old hash
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def same_task(self, other: Task) -> bool:
        """Equality that ignores provenance (used by round-trip tests)."""
        return self.content_hash() == other.content_hash()


def check_task_id(value: str) -> None:
    """Raise ValueError when `value` cannot name a task directory."""
    if not value or len(value) > MAX_ID_CHARS:
        raise ValueError(f"task id must have 1-{MAX_ID_CHARS} characters, got {len(value)}")
    bad = ID_FORBIDDEN.search(value)
    if bad:
        raise ValueError(
            f"task id {value!r} contains {bad.group(0)!r} (whitespace, a path "
            "separator or a control character)"
        )
    if value.startswith("."):
        raise ValueError(f"task id {value!r} starts with '.' (a hidden directory)")


def safe_task_id(task_id: str) -> str:
    """`task_id` when it is Docker-safe; else a lower-case slug plus 8 hex of its hash."""
    if len(task_id) <= 100 and DOCKER_SAFE_ID.match(task_id):
        return task_id
    slug = "-".join(re.findall(r"[a-z0-9]+", task_id.lower()))[:80].strip("-") or "task"
    return f"{slug}-{hashlib.sha256(task_id.encode()).hexdigest()[:8]}"


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_function_names(source: str) -> list[str]:
    """Names of top-level `test_*` functions (and `Test*` class methods as `Class::test`).

    Falls back to a regex when the source does not parse, so a syntax error in a test
    file is reported by the verifier (which runs it) rather than hidden here. Cached per
    source text: a parse costs about a millisecond, and the same tests are validated and
    scored many times (every format round trip, every rollout's reward).
    """
    return list(_parsed_test_names(source))


@functools.lru_cache(maxsize=4096)
def _parsed_test_names(source: str) -> tuple[str, ...]:
    try:
        with _AST_LOCK:
            tree = ast.parse(source)
    except SyntaxError:
        return tuple(re.findall(r"^(?:async\s+)?def\s+(test_\w*)\s*\(", source, flags=re.M))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(
                    item, (ast.FunctionDef, ast.AsyncFunctionDef)
                ) and item.name.startswith("test"):
                    names.append(f"{node.name}::{item.name}")
    return tuple(names)


# CPython 3.11's parser is not thread-safe ("AST constructor recursion depth mismatch"
# SystemError when tasks are validated on a thread pool), so parses are serialized.
_AST_LOCK = threading.Lock()


def _has_from(dockerfile: str) -> bool:
    for line in dockerfile.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.upper().startswith("ARG "):
            continue
        return stripped.upper().startswith("FROM ")
    return False


def _check_relative_path(path: str, where: str) -> None:
    parts = path.replace("\\", "/").split("/")
    if not path or path.startswith("/") or ".." in parts:
        raise ValueError(f"{where}: path {path!r} must be relative and stay inside the task")


def changed_fields(a: Task, b: Task) -> list[str]:
    """Dotted paths (two levels deep) where `a` and `b` differ, provenance aside."""
    da, db = a.model_dump(mode="json"), b.model_dump(mode="json")
    paths = []
    for key in da:
        if key == "provenance" or da[key] == db[key]:
            continue
        if isinstance(da[key], dict) and isinstance(db[key], dict) and key != "metadata":
            paths += [f"{key}.{sub}" for sub in da[key] if da[key][sub] != db[key].get(sub)]
        else:
            paths.append(key)
    return paths
