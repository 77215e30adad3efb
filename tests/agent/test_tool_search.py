"""Glob semantics the search tool promises (pure; the container listing is tested in test_tools)."""

from __future__ import annotations

import pytest

from tbrl_lib.agent.tool_base import ToolError
from tbrl_lib.agent.tool_search import glob_to_regex


@pytest.mark.parametrize(
    "pattern,path,matches",
    [
        ("**/*.py", "a.py", True),  # ** matches zero directories
        ("**/*.py", "x/y/a.py", True),
        ("*.py", "x/a.py", False),  # * stays within one level
        ("?.py", "a.py", True),
        ("?.py", "ab.py", False),
        ("src/**", "src/a/b.txt", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("**/docker-compose*.y?ml", "deploy/docker-compose.prod.yaml", True),
        ("*.{py,txt}", "notes.txt", True),
        ("[!a]b", "ab", False),
        ("a.py", "axpy", False),  # dots are literal
    ],
)
def test_glob_semantics(pattern, path, matches):
    assert bool(glob_to_regex(pattern).match(path)) is matches


def test_unreadable_glob_is_a_tool_error():
    with pytest.raises(ToolError, match="cannot read the glob"):
        glob_to_regex("[z-a].py")  # a reversed range
