import subprocess

REPO = "/app/repo"
SECRET = "sk-live-9Qx7TzR2mVb4Lp8Nw3Ka"
MAIN = ['Initial skeleton', 'Add settings', 'Add service config', 'Add credentials for staging', 'Wire API key into settings', 'Document usage', 'Add region to credentials', 'Bump main', 'Remove credentials file', 'Add timeout setting', 'More docs']
RELEASE = ['Initial skeleton', 'Add settings', 'Add service config', 'Add credentials for staging', 'Wire API key into settings', 'Document usage', 'Add region to credentials', 'Bump main', 'Remove credentials file', 'Add timeout setting', 'Hotfix marker', 'Release notes']


def git(*args):
    out = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_no_object_contains_secret():
    listing = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
    objects = [l.split() for l in listing.splitlines()]
    assert len(objects) > 20
    for sha, kind in objects:
        if kind in ("blob", "commit", "tag"):
            assert SECRET not in git("cat-file", "-p", sha), (sha, kind)


def test_credentials_removed_everywhere():
    for commit in git("rev-list", "--all").splitlines():
        assert "config/credentials.json" not in git("ls-tree", "-r", "--name-only", commit).splitlines()


def test_history_shape_kept():
    assert git("log", "--reverse", "--format=%s", "main").splitlines() == MAIN
    assert git("log", "--reverse", "--format=%s", "release").splitlines() == RELEASE
    assert set(git("log", "--all", "--format=%an <%ae>").splitlines()) == {"Dev <dev@example.com>"}
    staging = git("log", "--all", "--format=%H", "--grep=Add credentials for staging").split()
    assert len(staging) == 1
    assert "config/credentials.json" not in git("ls-tree", "-r", "--name-only", staging[0])


def test_tags_rewritten():
    assert git("cat-file", "-t", "v1.0") == "tag"
    assert git("tag", "-l", "--format=%(contents:subject)", "v1.0") == "First release"
    assert git("log", "-1", "--format=%s", "v1.0^{commit}") == "Add region to credentials"
    assert git("cat-file", "-t", "v1.1") == "commit"
    assert git("log", "-1", "--format=%s", "v1.1") == "Add timeout setting"
    for tag in ("v1.0", "v1.1"):
        git("merge-base", "--is-ancestor", tag, "main")
        assert "config/credentials.json" not in git("ls-tree", "-r", "--name-only", tag)


def test_content_redacted():
    assert git("show", "main:app/settings.py") == 'DEBUG = False\nAPI_KEY = "REDACTED"\nTIMEOUT = 30'
    assert git("show", "release:notes.txt") == "token=REDACTED"
    assert git("show", "main:README.md") == "# Service\n- usage docs\n- more docs"
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main" and git("status", "--porcelain") == ""
    assert open(REPO + "/app/settings.py").read().count("REDACTED") == 1
