"""In CI (`CI=true`) a skipped test of a group CI installs everything for (Ray, Slurm, Harbor,
a browser) fails the run, naming it; elsewhere it stays a skip (`tests/conftest.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import pytest

@pytest.mark.slurm
def test_marked():
    pytest.skip("no slurmctld here")

def test_plain():
    pytest.skip("not a group")
"""


def _pytest(probe: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*argv, "--rootdir", str(probe.parent), str(probe)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_skipped_group_fails_ci_and_only_ci(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    in_ci = _pytest(probe, "true")
    assert in_ci.returncode == 1, in_ci.stdout
    assert "test_probe.py::test_marked [slurm]: Skipped: no slurmctld here" in in_ci.stdout
    assert "test_plain" not in in_ci.stdout.split("skipped in CI")[-1]
    assert _pytest(probe, None).returncode == 0
