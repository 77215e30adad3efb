"""`KEY=VALUE` settings from a command line, the one parser training and evaluation share.

Values are read as YAML (`3`, `true`, `[a, b]`, `null`); dotted keys nest, so
`episode.tools.bash_default_timeout=60` becomes `{"episode": {"tools": {...: 60}}}`.
"""

from __future__ import annotations

from typing import Any

import yaml


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`["max_steps=2", "episode.max_turns=5"]` -> `{"max_steps": 2, "episode": {"max_turns": 5}}`."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ValueError(
                f"override {item!r} is not KEY=VALUE (e.g. max_steps=2 or episode.max_turns=5)"
            )
        *parents, leaf = key.split(".")
        node = out
        for i, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(
                    f"override {item!r}: {'.'.join(parents[: i + 1])} was already set to a value"
                )
            node = child
        node[leaf] = yaml.safe_load(value)
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
