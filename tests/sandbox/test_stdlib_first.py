"""`stdlib_first`: a standard-library name comes from the stdlib directory even when a test
puts another directory first on `sys.path` (no Docker; a temporary "stdlib" stands in)."""

from __future__ import annotations

import importlib
import sys

import pytest

from tbrl_lib.sandbox import stdlib_first

NAMES = ("tbrl_fake_std", "tbrl_fake_pkg", "tbrl_only_app")


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    std, app = tmp_path / "std", tmp_path / "app"
    (std / "tbrl_fake_pkg").mkdir(parents=True)
    (app / "tbrl_fake_pkg").mkdir(parents=True)
    (std / "tbrl_fake_std.py").write_text("WHO = 'stdlib'\n")
    (std / "tbrl_fake_pkg" / "__init__.py").write_text("")
    (std / "tbrl_fake_pkg" / "sub.py").write_text("WHO = 'stdlib'\n")
    (app / "tbrl_fake_std.py").write_text("WHO = 'agent'\n")
    (app / "tbrl_fake_pkg" / "__init__.py").write_text("")
    (app / "tbrl_fake_pkg" / "sub.py").write_text("WHO = 'agent'\n")
    (app / "tbrl_only_app.py").write_text("WHO = 'agent'\n")
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.syspath_prepend(str(app))  # what `sys.path.insert(0, "/app")` does
    yield std
    for name in [*NAMES, "tbrl_fake_pkg.sub"]:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def test_without_the_finder_the_agents_copy_wins(dirs):
    assert importlib.import_module("tbrl_fake_std").WHO == "agent"


def test_stdlib_names_and_their_submodules_come_from_the_stdlib(dirs):
    finder = stdlib_first.install([str(dirs), str(dirs / "missing")])
    assert finder.dirs == [str(dirs)]
    assert sys.meta_path.index(finder) < sys.meta_path.index(importlib.machinery.PathFinder)
    assert importlib.import_module("tbrl_fake_std").WHO == "stdlib"
    assert importlib.import_module("tbrl_fake_pkg.sub").WHO == "stdlib"
    assert importlib.import_module("tbrl_only_app").WHO == "agent", "other names: as usual"


def test_the_default_directories_are_this_interpreters_stdlib(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    finder = stdlib_first.install()
    assert finder.find_spec("statistics").origin.startswith(finder.dirs[0])
    assert finder.find_spec("pytest") is None and finder.find_spec("sys") is None
