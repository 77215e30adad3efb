import subprocess

REPO = "/app/repo"


def git(*args):
    out = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def bad_commit():
    for line in git("log", "--all", "--format=%H %s").splitlines():
        sha, subject = line.split(" ", 1)
        if subject == "Tidy rounding helpers":
            return sha
    raise AssertionError("history was rewritten")


def test_first_bad_commit_identified():
    assert open("/app/first_bad_commit.txt").read().strip() == bad_commit()


def test_history_preserved():
    assert git("rev-list", "--count", "main") == "28"
    git("merge-base", "--is-ancestor", bad_commit(), "main")
    assert git("log", "-1", "--format=%s", "main~1") == "Final docs pass"


def test_head_reverts_bad_commit():
    assert bad_commit() in git("log", "-1", "--format=%B", "main")
    changed = git("diff", "--name-only", "main~1", "main").splitlines()
    assert changed == ["pricing.py"]


def test_pricing_fixed():
    code = "import pricing; print(pricing.order_total([(1999, 3)], 10), pricing.order_total([(1000, 1)], 15))"
    out = subprocess.run(["python3", "-B", "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.split() == ["5398", "850"]
    assert git("status", "--porcelain", "--untracked-files=no") == "" and git("rev-parse", "--abbrev-ref", "HEAD") == "main"
