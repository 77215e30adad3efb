"""File helpers shared by the directory formats (TB1, Harbor): exact text I/O and parsers
whose failures become `TaskFormatError`s naming the file and what to fix.

Text is read and written byte-exact (UTF-8, no newline translation), so an instruction or a
test file survives a round trip unchanged. Build-context files that are not UTF-8 are read as
bytes (`collect_tree`), up to `MAX_BINARY_BYTES` per task; everywhere else (tests, solution,
task.toml) a non-UTF-8 file is reported, never skipped silently. The one exception is
Python bytecode (`__pycache__/`, `*.pyc`), which running the tests leaves behind and which is
regenerated, so directory readers ignore it.

Weights: `parse_weights` reads a `{test name: weight}` object; strictly, every value must be
a number; leniently (TB1 variants), numeric strings are read, keys are mapped onto the test
functions they mean (`hello` -> `test_hello`, `tests/test_outputs.py::test_x` -> `test_x`)
and what cannot be used is dropped with a `LoadNote` saying so.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tbrl_lib.tasks.errors import TaskFormatError
from tbrl_lib.tasks.model import MAX_BINARY_BYTES, LoadNote
from tbrl_lib.tasks.weights import function_key

LENIENT_HINT = "or load with --lenient (mode='lenient') to map or drop such entries with a note"

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_text(path: Path, location: str, field: str) -> str:
    """The file's text, exactly; a missing or non-UTF-8 file is a `TaskFormatError`."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TaskFormatError(location, field, "file is missing", f"create {path}") from None
    except OSError as exc:
        raise TaskFormatError(
            location, field, f"cannot read file: {exc}", "make the file readable"
        ) from None
    return decode_utf8(data, location, field)


def decode_utf8(data: bytes, location: str, field: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(
            location,
            field,
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            "save the file as UTF-8; binary files are carried only in the build context "
            "(environment/ in Harbor, beside the Dockerfile in TB1)",
        ) from None


def write_text(path: Path, text: str | bytes) -> None:
    """Write text (or bytes) exactly (no newline translation); `.sh` files become executable."""
    if not path.parent.is_dir():  # a stat is cheaper than mkdir on an existing directory
        path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    if path.suffix == ".sh":
        os.chmod(path, 0o755)


def parse_json_object(text: str, location: str, field: str, fix: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFormatError(location, field, f"invalid JSON: {exc}", fix) from None
    if not isinstance(value, dict):
        raise TaskFormatError(
            location, field, f"expected a JSON object, got {type(value).__name__}", fix
        )
    return value


def parse_weights(
    value: dict[str, Any],
    location: str,
    field: str,
    test_names: Sequence[str] | None = None,
    lenient: bool = False,
) -> tuple[dict[str, float], list[LoadNote]]:
    """`{test name: weight}` from a parsed weights object, and what leniency changed.

    Strict: every value must be a number (names and ranges are the model's to check).
    Lenient: see the module docstring; `test_names` (from the pytest source, None when there
    is none) is what keys are mapped onto.
    """
    if not lenient:
        weights: dict[str, float] = {}
        for name, weight in value.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise TaskFormatError(
                    location,
                    field,
                    f"weight of {name!r} is {weight!r}, not a number",
                    f'give each test a number, e.g. {{"test_output_exists": 0.4}}, {LENIENT_HINT}',
                )
            weights[name] = float(weight)
        return weights, []
    return _lenient_weights(value, field, test_names)


def _lenient_weights(
    value: Mapping[str, Any], field: str, test_names: Sequence[str] | None
) -> tuple[dict[str, float], list[LoadNote]]:
    notes: list[LoadNote] = []

    def note(problem: str, fix: str) -> None:
        notes.append(LoadNote(field=field, problem=problem, fix=fix))

    weights: dict[str, float] = {}
    for key, raw in value.items():
        weight = _as_weight(raw)
        if weight is None:
            note(
                f"dropped {key!r}: its weight {raw!r} is not a non-negative number",
                f'give {key!r} a number (e.g. "{key}": 1), or delete the entry',
            )
            continue
        if isinstance(raw, str):
            note(
                f"read the text {raw!r} of {key!r} as the number {weight:g}", "write it as a number"
            )
        name = _test_for_key(key, test_names)
        if name is None:
            note(
                f"dropped {key!r} (weight {weight:g}): it names no test function "
                f"(tests: {', '.join(test_names or []) or 'none'})",
                "rename the key after a test function, or delete it",
            )
            continue
        if name in weights:
            note(
                f"dropped {key!r}: it means {name!r}, which already has a weight "
                f"({weights[name]:g})",
                "give each test one weight",
            )
            continue
        if name != key:
            note(f"mapped {key!r} to the test function {name!r}", f"write the key as {name!r}")
        weights[name] = weight
    if weights and sum(weights.values()) <= 0:
        note(
            f"dropped every weight: they sum to {sum(weights.values()):g}, so no test would count",
            "give at least one test a positive weight",
        )
        weights = {}
    if notes and not weights:
        note("no usable weight is left, so every test weighs the same", "fix the weights file")
    return weights, notes


def _as_weight(raw: Any) -> float | None:
    """A non-negative finite weight from a number or numeric text ("0.5", "50%"), else None."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return None
    scale = 1.0
    if isinstance(raw, str):
        raw = raw.strip()
        if raw.endswith("%"):
            raw, scale = raw[:-1], 0.01
    try:
        weight = float(raw) * scale
    except ValueError:
        return None
    return weight if math.isfinite(weight) and weight >= 0 else None


def _test_for_key(key: str, test_names: Sequence[str] | None) -> str | None:
    """The test function a weights key means: itself; its pytest node id's function
    (`tests/test_outputs.py::TestA::test_x[1]`); `TestA.test_x`; the name with `test_` in
    front; or a unique case-insensitive match of one of those."""
    if test_names is None:
        return key  # no pytest source to check against (a script-only task)
    segments = [part for part in re.split(r"::|\.", function_key(key)) if part]
    if not segments:
        return None
    leaf = segments[-1]
    candidates = [key, function_key(key), "::".join(segments[-2:]), leaf, f"test_{leaf}"]
    for candidate in candidates:
        if candidate in test_names:
            return candidate
    folded = {c.lower() for c in candidates}
    matches = [name for name in test_names if name.lower() in folded]
    return matches[0] if len(matches) == 1 else None


def parse_yaml_mapping(text: str, location: str, field: str) -> dict[str, Any]:
    try:
        value = yaml.load(text, Loader=SafeLoader)
    except yaml.YAMLError as exc:
        raise TaskFormatError(
            location, field, f"invalid YAML: {_one_line(exc)}", "fix the YAML syntax"
        ) from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TaskFormatError(
            location,
            field,
            f"expected a YAML mapping, got {type(value).__name__}",
            "write `key: value` lines at the top level",
        )
    return value


def parse_toml(text: str, location: str, field: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(
            location, field, f"invalid TOML: {exc}", "fix the TOML syntax"
        ) from None


def dump_yaml(value: dict[str, Any]) -> str:
    """YAML with multi-line strings as `|` blocks where that is exact (PyYAML falls back to
    quoting when a block would change the text)."""
    return yaml.dump(value, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


class _BlockDumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(ch in _YAML_UNSAFE or (not ch.isprintable() and ch not in "\n\t") for ch in value):
        style = '"'  # YAML would fold \r, NEL, LS/PS or a BOM into line breaks; escape them
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_YAML_UNSAFE = frozenset("\r\x85\u2028\u2029\ufeff")


_BlockDumper.add_representer(str, _represent_str)


def collect_files(root: Path, location: str, field: str, exclude: set[str]) -> dict[str, str]:
    """Every file under `root` (relative POSIX path -> text), except top-level `exclude`.

    Symlinks and non-UTF-8 files are errors (tests and solutions are plain text).
    """
    files: dict[str, str] = {}
    for rel, path in _walk(root, location, field, exclude):
        files[rel] = read_text(path, location, f"{field}/{rel}")
    return files


def collect_tree(
    root: Path, location: str, field: str, exclude: set[str]
) -> tuple[dict[str, str], dict[str, bytes]]:
    """A build context under `root`: (text files, binary files), by relative POSIX path.

    A file is text when it decodes as UTF-8, else bytes; binary files together may hold at
    most `MAX_BINARY_BYTES` (checked from their sizes before they are read)."""
    text: dict[str, str] = {}
    binary: dict[str, bytes] = {}
    paths = list(_walk(root, location, field, exclude))
    sizes = {rel: path.stat().st_size for rel, path in paths}
    for rel, path in paths:
        if sizes[rel] > MAX_BINARY_BYTES:
            _too_big(location, field, {rel: sizes[rel]})
        data = path.read_bytes()
        try:
            text[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            binary[rel] = data
    if sum(len(data) for data in binary.values()) > MAX_BINARY_BYTES:
        _too_big(location, field, {rel: len(data) for rel, data in binary.items()})
    return text, binary


def _too_big(location: str, field: str, sizes: dict[str, int]) -> None:
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
    listed = ", ".join(f"{rel} ({size:,} bytes)" for rel, size in largest)
    raise TaskFormatError(
        location,
        field,
        f"binary files total {sum(sizes.values()):,} bytes, over the "
        f"{MAX_BINARY_BYTES // 2**20} MiB a task may carry (largest: {listed})",
        "make the data smaller, or generate or download it in the Dockerfile (RUN ...)",
    )


def _walk(root: Path, location: str, field: str, exclude: set[str]) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if not root.is_dir():
        return found
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel in exclude or rel.split("/")[0] in exclude or _is_bytecode(rel):
            continue
        if path.is_symlink():
            raise TaskFormatError(
                location,
                f"{field}/{rel}",
                "is a symbolic link",
                "replace the link with the file it points to",
            )
        if path.is_file():
            found.append((rel, path))
    return found


def _is_bytecode(rel: str) -> bool:
    return "__pycache__" in rel.split("/") or rel.endswith((".pyc", ".pyo"))


def check_file_tree(files: Mapping[str, object], location: str, field: str) -> None:
    """A directory cannot hold both `a` and `a/b`, and bytecode is never written: either is
    a `TaskFormatError`."""
    dirs = {"/".join(rel.split("/")[:cut]) for rel in files for cut in range(1, rel.count("/") + 1)}
    bytecode = sorted(rel for rel in files if _is_bytecode(rel))
    if bytecode:  # readers ignore these, so writing them would not round-trip
        raise TaskFormatError(
            location,
            f"{field} ({bytecode[0]})",
            "is Python bytecode",
            "drop compiled files; they are regenerated when the code runs",
        )
    clash = sorted(set(files) & dirs)
    if clash:
        raise TaskFormatError(
            location,
            f"{field} ({clash[0]})",
            "is both a file and a directory",
            "rename the file or the directory",
        )


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        write_text(root / rel, content)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
