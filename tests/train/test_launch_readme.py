"""Every `tbrl train` line in the README and the docs pages parses and runs (`run` and `sft`,
which train, only with --dry-run or --help). The how-tos moved from the README to docs/."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from tbrl_lib.cli.train import app

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _lines() -> list[list[str]]:
    out = []
    for line in (ln for page in PAGES for ln in page.read_text().splitlines()):
        m = re.match(r"^(?:\.venv/bin/)?tbrl train (.+)$", line.strip())
        if m:
            args = shlex.split(m.group(1).split("#")[0])
            if args and "|" not in args[0]:  # skip the `tbrl train run|presets|...` summary line
                out.append(args)
    return out


def test_readme_train_lines_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lines = _lines()
    assert any(a[0] == "launch" for a in lines)
    for args in lines:
        if args[0] in ("run", "sft") and "--dry-run" not in args:
            args = [*args, "--help"]
        if args[0] == "launch":
            args = [*args, "--out", str(tmp_path)]
        result = CliRunner().invoke(app, args)
        assert "Usage:" not in result.output or "--help" in args, (args, result.output)
        assert result.exit_code in (0, 2), (args, result.output)
