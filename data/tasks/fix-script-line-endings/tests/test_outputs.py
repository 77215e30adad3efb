import os
import subprocess
from pathlib import Path

SCRIPT = Path("/app/bin/report.sh")


def test_no_carriage_returns():
    assert b"\r" not in SCRIPT.read_bytes()


def test_executable():
    assert os.access(SCRIPT, os.X_OK)


def test_runs_directly():
    out = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == ["disk report: ok", "partition root checked", "partition data checked"]
