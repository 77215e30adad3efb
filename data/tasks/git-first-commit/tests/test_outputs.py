import subprocess

REPO = "/app/project"


def git(*args):
    out = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_single_commit_on_main():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git("rev-list", "--count", "HEAD") == "1"
    assert git("log", "-1", "--format=%s") == "Initial commit"


def test_author_local():
    assert git("log", "-1", "--format=%an <%ae>") == "Build Bot <bot@example.com>"
    assert git("config", "--local", "user.email") == "bot@example.com"


def test_tracked_files():
    files = set(git("ls-files").splitlines())
    assert {"src/main.py", "README.md", ".gitignore"} <= files
    assert "secrets.env" not in files
    assert not any(f.startswith("build/") for f in files)


def test_clean_tree():
    git("rev-parse", "HEAD")
    assert git("status", "--porcelain") == ""
