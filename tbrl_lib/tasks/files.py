"""File helpers shared by the directory formats (TB1, Harbor): exact text I/O and parsers
whose failures become `TaskFormatError`s naming the file and what to fix.

Text is read and written byte-exact (UTF-8, no newline translation), so an instruction or a
test file survives a round trip unchanged. Binary files are not supported by the `Task`
model (its files are text); they are reported as non-UTF-8, never skipped silently. The one
exception is Python bytecode (`__pycache__/`, `*.pyc`), which running the tests leaves behind
and which is regenerated, so directory readers ignore it.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import yaml

from tbrl_lib.tasks.errors import TaskFormatError

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_text(path: Path, location: str, field: str) -> str:
    """The file's text, exactly; a missing or non-UTF-8 file is a `TaskFormatError`."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TaskFormatError(location, field, "file is missing", f"create {path}") from None
    except OSError as exc:
        raise TaskFormatError(location, field, f"cannot read file: {exc}", "make the file readable") from None
    return decode_utf8(data, location, field)


def decode_utf8(data: bytes, location: str, field: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(
            location,
            field,
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            "save the file as UTF-8; binary files cannot be carried by a task",
        ) from None


def write_text(path: Path, text: str) -> None:
    """Write text exactly (no newline translation); `.sh` files become executable."""
    if not path.parent.is_dir():  # a stat is cheaper than mkdir on an existing directory
        path.parent.mkdir(parents=True, exist_ok=True)
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
        raise TaskFormatError(location, field, f"expected a JSON object, got {type(value).__name__}", fix)
    return value


def parse_weights(value: dict[str, Any], location: str, field: str) -> dict[str, float]:
    """Check that a weights object maps names to numbers (range checks are the model's)."""
    weights: dict[str, float] = {}
    for name, weight in value.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise TaskFormatError(
                location, field, f"weight of {name!r} is {weight!r}, not a number",
                'give each test a number, e.g. {"test_output_exists": 0.4}',
            )
        weights[name] = float(weight)
    return weights


def parse_yaml_mapping(text: str, location: str, field: str) -> dict[str, Any]:
    try:
        value = yaml.load(text, Loader=SafeLoader)
    except yaml.YAMLError as exc:
        raise TaskFormatError(location, field, f"invalid YAML: {_one_line(exc)}", "fix the YAML syntax") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TaskFormatError(location, field, f"expected a YAML mapping, got {type(value).__name__}",
                              "write `key: value` lines at the top level")
    return value


def parse_toml(text: str, location: str, field: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(location, field, f"invalid TOML: {exc}", "fix the TOML syntax") from None


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

    Symlinks and non-UTF-8 files are errors (a task's files are plain text).
    """
    files: dict[str, str] = {}
    if not root.is_dir():
        return files
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel in exclude or rel.split("/")[0] in exclude or _is_bytecode(rel):
            continue
        if path.is_symlink():
            raise TaskFormatError(location, f"{field}/{rel}", "is a symbolic link",
                                  "replace the link with the file it points to")
        if path.is_file():
            files[rel] = read_text(path, location, f"{field}/{rel}")
    return files


def _is_bytecode(rel: str) -> bool:
    return "__pycache__" in rel.split("/") or rel.endswith((".pyc", ".pyo"))


def check_file_tree(files: dict[str, str], location: str, field: str) -> None:
    """A directory cannot hold both `a` and `a/b`, and bytecode is never written: either is
    a `TaskFormatError`."""
    dirs = {"/".join(rel.split("/")[:cut]) for rel in files for cut in range(1, rel.count("/") + 1)}
    bytecode = sorted(rel for rel in files if _is_bytecode(rel))
    if bytecode:  # readers ignore these, so writing them would not round-trip
        raise TaskFormatError(location, f"{field} ({bytecode[0]})", "is Python bytecode",
                              "drop compiled files; they are regenerated when the code runs")
    clash = sorted(set(files) & dirs)
    if clash:
        raise TaskFormatError(location, f"{field} ({clash[0]})", "is both a file and a directory",
                              "rename the file or the directory")


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        write_text(root / rel, text)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
