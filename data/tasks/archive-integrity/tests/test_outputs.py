import hashlib
import os

ROOT = "/opt/release"


def sums():
    out = {}
    for line in open("/app/incoming/SHA256SUMS"):
        digest, path = line.split(None, 1)
        out[path.strip()] = digest
    return out


def test_drift_report():
    lines = [l for l in open("/app/drift.txt").read().splitlines() if l.strip()]
    assert lines == ["MODIFIED conf/app.conf", "MISSING docs/NOTES.txt", "EXTRA docs/extra.txt"]


def test_checksums_restored():
    for path, digest in sums().items():
        assert hashlib.sha256(open(os.path.join(ROOT, path), "rb").read()).hexdigest() == digest, path


def test_no_extra_files():
    files = {os.path.relpath(os.path.join(dp, f), ROOT) for dp, _, fs in os.walk(ROOT) for f in fs}
    assert files == set(sums())


def test_tool_executable():
    assert os.access(os.path.join(ROOT, "bin/tool"), os.X_OK)
    assert "mode=prod" in open(os.path.join(ROOT, "conf/app.conf")).read()
