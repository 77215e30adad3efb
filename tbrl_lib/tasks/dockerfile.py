"""Reading a Dockerfile's FROM lines, and rewriting them.

`base_images(task)` lists the external images a task starts from (a prebuilt `image` counts
as its own base; `FROM <earlier stage>` of a multi-stage build does not). `rewrite_bases`
replaces those names in the text, leaving every other byte as written: the sandbox builds a
Dockerfile written for a public image on its local stand-in this way. Instruction starts are
found the way the engine finds them: not on continuation lines (after a trailing backslash),
not inside heredoc bodies (`RUN cat <<EOF ... EOF`), not in comments.

Left out: `ARG` expansion (`FROM $BASE` is returned as written) and parser directives.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tbrl_lib.tasks.model import Task

_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE)
_HEREDOC = re.compile(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")


def base_images(task: Task) -> list[str]:
    """The external images a task's environment starts from."""
    if task.environment.dockerfile is None:
        return [task.environment.image] if task.environment.image else []
    return [image for _, image in _external_froms(task.environment.dockerfile)]


def rewrite_bases(dockerfile: str, names: Mapping[str, str]) -> str:
    """`dockerfile` with each external FROM image found in `names` replaced by its value."""
    lines = dockerfile.splitlines(keepends=True)
    for index, image in _external_froms(dockerfile):
        if image in names:
            match = _FROM.match(lines[index])
            assert match is not None
            lines[index] = (
                lines[index][: match.start(1)] + names[image] + lines[index][match.end(1) :]
            )
    return "".join(lines)


def instruction_lines(dockerfile: str) -> list[str]:
    """The lines that start a Dockerfile instruction."""
    lines = dockerfile.splitlines()
    return [lines[i] for i in _instruction_starts(lines)]


def _external_froms(dockerfile: str) -> list[tuple[int, str]]:
    """(line index, image) of each FROM that names an image, not an earlier stage."""
    lines = dockerfile.splitlines()
    found, stages = [], set()
    for index in _instruction_starts(lines):
        match = _FROM.match(lines[index])
        if not match:
            continue
        image, stage = match.group(1), match.group(2)
        if image.lower() not in stages:
            found.append((index, image))
        if stage:
            stages.add(stage.lower())
    return found


def _instruction_starts(lines: list[str]) -> list[int]:
    starts, continuing, heredoc_ends = [], False, []
    for index, line in enumerate(lines):
        if heredoc_ends:
            if line.strip() == heredoc_ends[0]:
                heredoc_ends.pop(0)
            continue
        if not continuing and line.strip() and not line.lstrip().startswith("#"):
            starts.append(index)
        heredoc_ends += _HEREDOC.findall(line)
        continuing = line.rstrip().endswith("\\")
    return starts
