import gzip
import os
import stat
import subprocess
import tempfile

SCRIPT = "/app/rotate.sh"


def rotate(d, keep="3"):
    return subprocess.run([SCRIPT, d, keep], capture_output=True, text=True, timeout=30)


def write_log(d, text):
    with open(os.path.join(d, "app.log"), "w") as f:
        f.write(text)


def archive(d, n):
    with gzip.open(os.path.join(d, f"app.log.{n}.gz"), "rt") as f:
        return f.read()


def test_single_rotation():
    with tempfile.TemporaryDirectory() as d:
        write_log(d, "first\n")
        os.chmod(os.path.join(d, "app.log"), 0o640)
        r = rotate(d)
        assert r.returncode == 0, r.stderr
        assert archive(d, 1) == "first\n"
        assert os.path.getsize(os.path.join(d, "app.log")) == 0
        assert stat.S_IMODE(os.stat(os.path.join(d, "app.log")).st_mode) == 0o640


def test_keep_limit_and_order():
    with tempfile.TemporaryDirectory() as d:
        for i in range(1, 6):
            write_log(d, f"v{i}\n")
            assert rotate(d).returncode == 0
        assert sorted(os.listdir(d)) == ["app.log", "app.log.1.gz", "app.log.2.gz", "app.log.3.gz"]
        assert [archive(d, n) for n in (1, 2, 3)] == ["v5\n", "v4\n", "v3\n"]


def test_empty_log_noop():
    with tempfile.TemporaryDirectory() as d:
        write_log(d, "x\n")
        rotate(d)
        r = rotate(d)
        assert r.returncode == 0
        assert sorted(os.listdir(d)) == ["app.log", "app.log.1.gz"]
        assert archive(d, 1) == "x\n"


def test_bad_arguments():
    with tempfile.TemporaryDirectory() as d:
        write_log(d, "x\n")
        assert rotate(d, "zero").returncode == 2
        assert rotate(d, "0").returncode == 2
        assert rotate(os.path.join(d, "missing"), "3").returncode == 2
        assert open(os.path.join(d, "app.log")).read() == "x\n"
