"""The workspace: the folder that holds this project, where every default path resolves.

A notebook's kernel starts in `notebooks/`, papermill in whatever folder the shell is in, a
batch job in its submit folder: none of them is a place to resolve `data/tasks` or
`outputs/` from. `workspace_root()` finds the one place, in order:

1. `TBRL_WORKSPACE`, when set: a folder holding this project (`pyproject.toml` naming project
   `tbrl`), else a `WorkspaceError` naming the variable;
2. the nearest folder at or above the current directory whose `pyproject.toml` names `tbrl`;
3. the package's own checkout (`tbrl_lib.REPO_ROOT`, an editable install), when it is one;
4. the current directory (an installed package run outside any checkout).

Default paths (`data/tasks`, `data/judge_cases`, `data/upstream`, `outputs/`, the tiny
model's cache) are `workspace_path(...)`. A path the user passes stays relative to where
they are; `find_input` reads one the way a researcher in `notebooks/` expects (their folder
first, then the workspace), and `shown_path` writes a path for a report relative to the
workspace, so a shared page names no folder of this machine. Standard library only: the
floor below everything.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from tbrl_lib import REPO_ROOT

ENV_VAR = "TBRL_WORKSPACE"
PROJECT = "tbrl"


class WorkspaceError(ValueError):
    """`TBRL_WORKSPACE` names no workspace, or an input is in neither place looked at."""


class InputNotFound(WorkspaceError, FileNotFoundError):
    """An input in neither the current folder nor the workspace; `problem` and `fix` let a
    reader re-raise it as its own error type."""

    def __init__(self, path: str | Path, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = str(path), problem, fix
        super().__init__(f"{path}: {problem}: {fix}")


def is_workspace(folder: Path) -> bool:
    """True when `folder/pyproject.toml` names project `tbrl`."""
    try:
        with (folder / "pyproject.toml").open("rb") as fh:
            return tomllib.load(fh).get("project", {}).get("name") == PROJECT
    except (OSError, tomllib.TOMLDecodeError):
        return False


def workspace_root() -> Path:
    """The workspace folder (see the module docstring for the order), absolute."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        folder = Path(value).expanduser().resolve()
        if not is_workspace(folder):
            raise WorkspaceError(
                f"{ENV_VAR}={value} is not a tbrl workspace (no pyproject.toml naming project "
                f"{PROJECT!r} in {folder}): point it at the folder tbrl was cloned into (the "
                "one holding pyproject.toml, data/ and notebooks/), or unset it"
            )
        return folder
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if is_workspace(folder):
            return folder
    return REPO_ROOT if is_workspace(REPO_ROOT) else here


def workspace_path(*parts: str | Path) -> Path:
    """A default path inside the workspace: `workspace_path("outputs", "models")`."""
    return workspace_root().joinpath(*parts)


def find_input(path: str | Path) -> Path:
    """An input the user named: as given when absolute or present from the current folder,
    else the same path inside the workspace (`data/tasks` from `notebooks/`). In neither
    place, a `WorkspaceError` names both."""
    given = Path(path).expanduser()
    if given.is_absolute() or given.exists():
        return given
    root = workspace_root()
    if (root / given).exists():
        return root / given
    raise InputNotFound(
        path,
        f"not found in the current folder ({Path.cwd()}) nor in the workspace ({root})",
        "give a path relative to either, or an absolute one",
    )


def shown_path(path: str | Path) -> str:
    """`path` as a report shows it: relative to the workspace when inside it (`outputs/run`),
    `~/...` under the home folder, else as given."""
    full = Path(path).expanduser().resolve()
    root = workspace_root()
    if full.is_relative_to(root):
        return full.relative_to(root).as_posix()
    home = Path.home().resolve()
    if full.is_relative_to(home):
        return "~/" + full.relative_to(home).as_posix()
    return str(path)
