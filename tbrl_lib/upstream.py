"""Where the upstream reference data live: `latest_verified.csv` (331 rows) and `judge_cases/`.

The project reads nothing outside its repository unless told. The data come from, in order:

1. `TBRL_UPSTREAM_DIR`, a folder holding `latest_verified.csv` and/or `judge_cases/`;
2. `data/upstream/` in the workspace (git-ignored; `default_dir()`), filled by
   `tbrl upstream fetch SRC` from a local folder (copied) or a git URL (cloned).

With neither, `upstream_dir()` is None and readers fall back to the repository's own data
(`data/tasks`, `data/judge_cases`) and print `hint()`. A reader that was asked for upstream
data explicitly raises `UpstreamMissing` (with the same hint) instead of dropping it.

Left out: downloading from a fixed address; the user names the source.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tbrl_lib.workspace import workspace_path

ENV_VAR = "TBRL_UPSTREAM_DIR"
CSV_NAME = "latest_verified.csv"
JUDGE_CASES = "judge_cases"


class UpstreamMissing(FileNotFoundError):
    """Upstream data were asked for and are not there; the message says how to add them."""


def hint() -> str:
    """The one line that tells a user how to make the upstream data available."""
    return (
        f"upstream reference data not found: set {ENV_VAR}=/path/to/upstream or run "
        f"`tbrl upstream fetch PATH_OR_GIT_URL` (a folder holding {CSV_NAME} and {JUDGE_CASES}/)"
    )


def default_dir() -> Path:
    """`data/upstream/` in the workspace: where `tbrl upstream fetch` puts the data."""
    return workspace_path("data", "upstream")


def upstream_dir() -> Path | None:
    """The upstream folder, or None when none was given. A variable that names no
    folder is an error, not a silent fallback."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        path = Path(value).expanduser()
        if not path.is_dir():
            raise UpstreamMissing(
                f"{ENV_VAR}={value} is not a directory: point it at the folder "
                f"holding {CSV_NAME} and {JUDGE_CASES}/, or unset it"
            )
        return path
    default = default_dir()
    if default.is_dir() and any(default.iterdir()):
        return default
    return None


def upstream_path(name: str) -> Path | None:
    """`name` (e.g. `CSV_NAME`, `JUDGE_CASES`) inside the upstream folder, or None."""
    root = upstream_dir()
    if root is None or not (root / name).exists():
        return None
    return root / name


def require_upstream(name: str) -> Path:
    """Like `upstream_path`, but a missing item raises `UpstreamMissing` with the hint."""
    path = upstream_path(name)
    if path is None:
        root = upstream_dir()
        where = f"{root} has no {name}; " if root else ""
        raise UpstreamMissing(where + hint())
    return path


def is_git_url(src: str) -> bool:
    return "://" in src or src.startswith("git@") or src.endswith(".git")


def fetch(src: str, dest: Path | None = None, force: bool = False) -> Path:
    """Fill `dest` (default `data/upstream/`) from a local folder (copy) or a git URL
    (`git clone --depth 1`); refuse to overwrite data there unless `force`."""
    dest = Path(dest) if dest else default_dir()
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise FileExistsError(f"{dest} already holds upstream data: pass --force to replace it")
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if is_git_url(src):
        if shutil.which("git") is None:
            raise FileNotFoundError(
                f"cannot clone {src}: git is not installed (apt-get install git)"
            )
        done = subprocess.run(
            ["git", "clone", "--quiet", "--depth", "1", src, str(dest)],
            check=False,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            shutil.rmtree(dest, ignore_errors=True)
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ValueError(
                f"git clone {src} failed ({last}): check the URL, "
                "or clone it yourself and pass the folder"
            )
    else:
        source = Path(src).expanduser()
        if not source.is_dir():
            raise FileNotFoundError(
                f"{src} is not a folder: give the folder holding {CSV_NAME} "
                f"and {JUDGE_CASES}/, or a git URL"
            )
        shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    if not ((dest / CSV_NAME).exists() or (dest / JUDGE_CASES).is_dir()):
        shutil.rmtree(dest)
        raise ValueError(
            f"{src} holds neither {CSV_NAME} nor {JUDGE_CASES}/: "
            "give the folder (or repository) that has them at its top level"
        )
    return dest
