"""Where default paths resolve: the workspace (`tbrl_lib/workspace.py`), wherever a notebook or
command starts. One test per rule, and one per default path that reads or writes in it; the
notebooks themselves run from three starting folders in tests/test_notebooks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbrl_lib import REPO_ROOT, upstream, workspace
from tbrl_lib.judge_eval import our_cases
from tbrl_lib.models.tiny_corpus import training_text
from tbrl_lib.notebook_tools.display import value_text
from tbrl_lib.notebook_tools.execute import execute_notebook
from tbrl_lib.run_folder import run_dir
from tbrl_lib.tasks import TaskFormatError, load_tasks
from tests.conftest import REPO


def test_the_variable_names_the_workspace_and_a_wrong_one_is_an_error(
    tmp_workspace, tmp_path, monkeypatch
):
    monkeypatch.chdir(REPO / "notebooks")  # the variable wins over the checkout around us
    assert workspace.workspace_root() == tmp_workspace
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
    for wrong in (tmp_path / "other", tmp_path / "typo"):
        monkeypatch.setenv(workspace.ENV_VAR, str(wrong))
        with pytest.raises(workspace.WorkspaceError, match="TBRL_WORKSPACE=.*or unset it"):
            workspace.workspace_root()


def test_the_nearest_project_at_or_above_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(workspace.ENV_VAR, raising=False)
    monkeypatch.chdir(REPO / "notebooks")
    assert workspace.workspace_root() == REPO
    inner = tmp_path / "clone" / "notebooks" / "deep"
    inner.mkdir(parents=True)
    (tmp_path / "clone" / "pyproject.toml").write_text('[project]\nname = "tbrl"\n')
    (inner.parent / "pyproject.toml").write_text('[project]\nname = "not-tbrl"\n')  # skipped
    monkeypatch.chdir(inner)
    assert workspace.workspace_root() == tmp_path / "clone"


def test_outside_any_workspace_the_package_checkout_is_it(tmp_path, monkeypatch):
    monkeypatch.delenv(workspace.ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert workspace.workspace_root() == REPO_ROOT


def test_default_paths_resolve_in_the_workspace(tmp_workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # somewhere else entirely
    made = run_dir("", "02_tool_design")
    assert made.parent == tmp_workspace / "outputs" and made.name.startswith("02_tool_design-")
    assert upstream.default_dir() == tmp_workspace / "data" / "upstream"
    assert our_cases() == tmp_workspace / "data" / "judge_cases"
    with pytest.raises(FileNotFoundError, match=str(tmp_workspace / "notebooks")):
        execute_notebook("04_train")  # `tbrl demo` runs the workspace's notebooks
    # the tiny model's tokenizer learns the workspace's bundled tasks
    task = tmp_workspace / "data" / "tasks" / "t1"
    task.mkdir(parents=True)
    (task / "instruction.md").write_text("zebrafinch quokka")
    assert "zebrafinch quokka" in training_text()


def test_a_folder_the_user_gives_stays_where_they_are(tmp_workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_dir("mine", "x").resolve() == tmp_path / "mine"


def test_an_input_is_read_from_here_first_then_from_the_workspace(tmp_path, monkeypatch):
    """`data/tasks` from `notebooks/` (the kernel's folder in JupyterLab) is the workspace's;
    a folder of the same name where the user is wins; in neither place, both are named."""
    monkeypatch.delenv(workspace.ENV_VAR, raising=False)
    monkeypatch.chdir(REPO / "notebooks")
    assert workspace.find_input("data/tasks") == REPO / "data" / "tasks"
    assert len(load_tasks("data/tasks", progress=False).tasks) >= 40
    mine = tmp_path / "project" / "data" / "tasks"
    mine.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "project")
    assert workspace.find_input("data/tasks") == Path("data/tasks")
    with pytest.raises(TaskFormatError, match=r"current folder \(.*\) nor in the workspace"):
        load_tasks("data/no-such-tasks", progress=False)


def test_reports_show_paths_relative_to_the_workspace(tmp_workspace, tmp_path):
    inside = tmp_workspace / "outputs" / "05_eval-1"
    assert workspace.shown_path(inside) == "outputs/05_eval-1"
    assert value_text(inside) == "outputs/05_eval-1"  # what show_config puts in a report
    assert workspace.shown_path(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")
