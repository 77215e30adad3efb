"""A run's folder and summary.json come from one small module below the library's packages,
so training names its folders without loading the notebooks' helpers (pandas)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tbrl_lib import notebook_tools, run_folder
from tests.conftest import REPO
from tests.test_layering import imported_units


def test_a_run_folder_is_the_one_given_or_a_new_dated_one(tmp_path, tmp_workspace):
    given = run_folder.run_dir(tmp_path / "a" / "b", "ignored")
    assert given == tmp_path / "a" / "b" and given.is_dir()
    made = run_folder.run_dir("", "train-cpu-smoke")
    assert made.parent == tmp_workspace / "outputs" and made.name.startswith("train-cpu-smoke-")
    assert made.is_dir()


def test_the_summary_is_sorted_json_with_anything_else_as_text(tmp_path):
    path = run_folder.record_summary(tmp_path, {"b": 1, "a": tmp_path})
    assert path == tmp_path / "summary.json"
    assert json.loads(path.read_text()) == {"a": str(tmp_path), "b": 1}
    assert path.read_text().index('"a"') < path.read_text().index('"b"')


def test_the_notebooks_reach_the_same_functions():
    assert notebook_tools.run_dir is run_folder.run_dir
    assert notebook_tools.record_summary is run_folder.record_summary


REPORT_ONLY = {"tbrl_lib/train/report/run_report.py"}
"""Notebook 04's report builder: tables for people, so the notebooks' formatting helpers."""


def test_training_imports_notebook_tools_only_in_the_report():
    found = {
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tbrl_lib" / "train").rglob("*.py"))
        if "notebook_tools" in {unit for unit, _ in imported_units(path)}
    }
    assert found <= REPORT_ONLY, found - REPORT_ONLY


@pytest.mark.slow
def test_a_training_run_loads_no_notebook_helpers():
    code = (
        "import sys, tbrl_lib.train.grpo.training, tbrl_lib.train.grpo.summary\n"
        "print(sorted(m for m in sys.modules if m.startswith('tbrl_lib.notebook_tools')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
