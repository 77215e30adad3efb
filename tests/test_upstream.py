"""Upstream reference data come only from TBRL_UPSTREAM_DIR or data/upstream/ (filled by
`tbrl upstream fetch` from a folder or a git URL); never from beside the repository."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tbrl_lib import REPO_ROOT, upstream


@pytest.fixture
def bare(monkeypatch, tmp_workspace):
    """A clone with nothing beside it: no variable, an empty workspace of its own."""
    monkeypatch.delenv(upstream.ENV_VAR, raising=False)
    assert upstream.default_dir() == tmp_workspace / "data" / "upstream"
    return upstream.default_dir()


@pytest.fixture
def source(tmp_path):
    """A folder shaped like the upstream data (one CSV, one judge-case suite)."""
    src = tmp_path / "src"
    (src / "judge_cases").mkdir(parents=True)
    (src / "judge_cases" / "cases.yaml").write_text("cases: []\n")
    (src / "latest_verified.csv").write_text("task_id\n")
    return src


def test_nothing_is_found_unless_told(bare):
    assert upstream.upstream_dir() is None
    assert upstream.upstream_path(upstream.CSV_NAME) is None
    with pytest.raises(upstream.UpstreamMissing, match="TBRL_UPSTREAM_DIR=.*tbrl upstream fetch"):
        upstream.require_upstream(upstream.JUDGE_CASES)


def test_the_variable_wins_and_a_wrong_one_is_an_error(bare, source, monkeypatch, tmp_path):
    monkeypatch.setenv(upstream.ENV_VAR, str(source))
    assert upstream.upstream_path(upstream.CSV_NAME) == source / "latest_verified.csv"
    monkeypatch.setenv(upstream.ENV_VAR, str(tmp_path / "typo"))
    with pytest.raises(upstream.UpstreamMissing, match="is not a directory.*or unset it"):
        upstream.upstream_dir()


def test_fetch_copies_a_folder_into_data_upstream(bare, source):
    dest = upstream.fetch(str(source))
    assert dest == bare and (bare / "judge_cases" / "cases.yaml").exists()
    assert upstream.upstream_path(upstream.CSV_NAME) == bare / "latest_verified.csv"
    with pytest.raises(FileExistsError, match="--force"):
        upstream.fetch(str(source))
    (source / "latest_verified.csv").write_text("task_id\nnew\n")
    upstream.fetch(str(source), force=True)
    assert "new" in (bare / "latest_verified.csv").read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_fetch_clones_a_git_url(bare, source, tmp_path):
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "data"],
    ):
        subprocess.run(["git", *args], cwd=source, check=True)
    upstream.fetch(f"file://{source}")
    assert (bare / "latest_verified.csv").exists() and (bare / "judge_cases").is_dir()


def test_fetch_refuses_a_folder_without_the_data_and_leaves_nothing(bare, tmp_path):
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    (empty / "README.md").write_text("not it")
    with pytest.raises(ValueError, match="neither latest_verified.csv nor judge_cases/"):
        upstream.fetch(str(empty))
    assert not bare.exists()
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        upstream.fetch(str(tmp_path / "missing"))


def test_cli_fetch_and_status(bare, source, tbrl):
    result = tbrl("upstream", "status")
    assert result.code == 1 and "tbrl upstream fetch" in result.out
    result = tbrl("upstream", "fetch", source)
    assert result.code == 0 and str(bare) in result.out
    assert "latest_verified.csv" in tbrl("upstream", "status").out
    result = tbrl("upstream", "fetch", source)
    assert result.code == 1 and result.err.startswith("error: ") and "--force" in result.err


def test_data_upstream_is_ignored_by_git():
    done = subprocess.run(
        ["git", "check-ignore", "-q", "data/upstream/latest_verified.csv"],
        check=False,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, "data/upstream/ must be in .gitignore"
