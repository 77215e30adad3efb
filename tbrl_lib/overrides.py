"""`KEY=VALUE` settings from a command line, the one parser training and evaluation share.

Values are read as YAML (`3`, `true`, `[a, b]`, `null`, `1e-3`); dotted keys nest, so
`episode.tools.bash_default_timeout=60` becomes `{"episode": {"tools": {...: 60}}}`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from pydantic_core import to_jsonable_python


class _ValueLoader(yaml.SafeLoader):
    """PyYAML reads YAML 1.1, where `1e-3` is a string (a float needs a dot: `1.0e-3`);
    this loader also reads exponent-only numbers as floats, as YAML 1.2 does."""


_ValueLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def yaml_value(text: str) -> Any:
    """One command-line value read as YAML (`2`, `true`, `1e-3`, `[a, b]`, `null`, `text`)."""
    return yaml.load(text, Loader=_ValueLoader)  # noqa: S506 - a SafeLoader subclass


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`["max_steps=2", "episode.max_turns=5"]` -> `{"max_steps": 2, "episode": {"max_turns": 5}}`."""
    values: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ValueError(
                f"override {item!r} is not KEY=VALUE (e.g. grpo.max_steps=2 or episode.max_turns=5)"
            )
        values[key] = yaml_value(value)
    return nest_dotted(values)


def nest_dotted(values: dict[str, Any]) -> dict[str, Any]:
    """`{"a.b": 1, "c": {"d.e": 2}}` -> `{"a": {"b": 1}, "c": {"d": {"e": 2}}}`: dotted keys
    (`--set`, a notebook's `settings`) become the nested sections they name."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        *parents, leaf = str(key).split(".")
        node = out
        for i, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(
                    f"setting {key!r}: {'.'.join(parents[: i + 1])} was already set to a value"
                )
            node = child
        value = nest_dotted(value) if isinstance(value, dict) else value
        node[leaf] = merge(node[leaf], value) if isinstance(node.get(leaf), dict) else value
    return out


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`base` with `overrides` applied recursively (nested dicts merge, other values replace)."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def settings_error(err: Exception, model: Any) -> str:
    """A failed `model.model_validate(...)` of `--set` items, as one short line per problem:
    the dotted key and what is wrong, with the known keys when the key is unknown (no pydantic
    boilerplate: error codes, echoed input, documentation links)."""
    errors = getattr(err, "errors", None)
    if not callable(errors):
        return str(err)
    problems = []
    for item in errors():
        loc = [str(part) for part in item.get("loc", ())]
        key = ".".join(loc) or "(settings)"
        if item.get("type") == "extra_forbidden":
            known = _known_keys(model, loc[:-1])
            hint = f"; known settings{' under ' + '.'.join(loc[:-1]) if loc[:-1] else ''}: "
            problems.append(f"unknown setting {key!r}" + (hint + ", ".join(known) if known else ""))
        elif not loc:  # a check across fields: its message names them
            problems.append(str(item.get("msg", "invalid settings")).removeprefix("Value error, "))
        else:
            message = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
            problems.append(f"{key}: {message} (got {item.get('input')!r})")
    return "; ".join(problems)


def settings_reference(model: Any, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted key, default as JSON, documentation) of every setting of a nested pydantic
    model, in declaration order: what `tbrl train settings` prints. Documentation is the
    field's docstring (`use_attribute_docstrings`)."""
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            rows += settings_reference(annotation, f"{key}.")
            continue
        default = to_jsonable_python(field.get_default(call_default_factory=True))
        rows.append((key, json.dumps(default), " ".join((field.description or "").split())))
    return rows


def _known_keys(model: Any, path: list[str]) -> list[str]:
    """The field names of the (nested pydantic) model reached by `path`, or [] if unknown."""
    for part in path:
        field = getattr(model, "model_fields", {}).get(part)
        model = getattr(field, "annotation", None)
    return sorted(getattr(model, "model_fields", {}) or [])
