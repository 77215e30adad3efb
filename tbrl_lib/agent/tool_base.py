"""What every tool shares: the result type, the error a tool raises for the model, output
capping, and shell quoting/probing helpers that go through the `Sandbox` protocol only.

A `ToolError` is the model's mistake (file not found, edit did not match): its message goes
back to the model and the episode goes on. A `SandboxError` is the infrastructure failing
and is not caught here: the episode ends with `infra_error`.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from typing import Protocol

from tbrl_lib.agent.actions import Action
from tbrl_lib.sandbox.base import Sandbox


class ToolError(Exception):
    """The action could not be done; the message says why and how to fix it."""


@dataclass(frozen=True)
class ToolResult:
    output: str
    ok: bool = True
    finished: bool = False
    """True only for `finish`: the episode ends after this action."""
    truncated_chars: int = 0


class Tool(Protocol):
    """A tool takes the actions of one tag and returns the text the model reads."""

    tag: str

    async def __call__(self, action: Action) -> str: ...


def cap_output(text: str, max_chars: int) -> tuple[str, int]:
    """Keep the head and tail of `text` within `max_chars`; a notice says what was dropped."""
    if len(text) <= max_chars:
        return text, 0
    dropped = len(text) - max_chars
    head = int(max_chars * 0.6)
    tail = max_chars - head
    notice = (
        f"\n[... {dropped:,} characters omitted: the output had {len(text):,} characters and "
        f"only {max_chars:,} are shown. Ask for less output (grep, head, tail, offset/limit).]\n"
    )
    return text[:head] + notice + text[len(text) - tail :], dropped


def q(text: str) -> str:
    return shlex.quote(text)


@dataclass(frozen=True)
class PathInfo:
    path: str
    """Absolute, normalised path (relative paths resolved against the shell's cwd)."""
    kind: str
    """`file`, `directory`, `other` or `missing`."""
    size: int = 0
    mode: int = 0o644


async def probe(sandbox: Sandbox, path: str, timeout: float = 30.0) -> PathInfo:
    """Resolve `path` in the persistent shell (so `cd` counts) and stat it, in one round trip."""
    if "\n" in path or "\0" in path:
        raise ToolError(f"path {path!r} contains a newline or NUL byte")
    script = (
        f'__p={q(path)}; case $__p in /*) ;; *) __p="$PWD/$__p";; esac; printf \'%s\\n\' "$__p"; '
        "stat -L -c '%F|%s|%a' -- \"$__p\" 2>/dev/null || echo missing; unset __p"
    )
    result = await sandbox.run(script, timeout=timeout)
    lines = result.output.strip("\n").split("\n")
    if len(lines) < 2:
        raise ToolError(f"could not inspect {path!r}: {result.output.strip()[:200]}")
    abs_path = posixpath.normpath(lines[0])
    if lines[-1] == "missing":
        return PathInfo(abs_path, "missing")
    kind_text, size, mode = (lines[-1].split("|") + ["0", "644"])[:3]
    kind = (
        "file" if "regular" in kind_text else "directory" if kind_text == "directory" else "other"
    )
    return PathInfo(abs_path, kind, int(size or 0), int(mode or "644", 8))
