import subprocess

REPO = "/app/repo"


def git(*args):
    out = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_branch_restored():
    assert git("log", "-1", "--format=%s", "feature-login") == "Validate login input"
    assert git("log", "-1", "--format=%s", "feature-login~1") == "Add login form"


def test_merge_commit_on_main():
    parents = git("log", "-1", "--format=%P", "main").split()
    assert len(parents) == 2
    git("merge-base", "--is-ancestor", "feature-login", "main")
    assert git("rev-parse", "main^2") == git("rev-parse", "feature-login")


def test_main_content():
    assert "raise ValueError" in git("show", "main:login.py")
    assert git("show", "main:README.md") == "# Demo app"
    git("show", "main:app.py")


def test_clean_checkout():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git("status", "--porcelain") == ""
    assert len(git("log", "-1", "--format=%P").split()) == 2
