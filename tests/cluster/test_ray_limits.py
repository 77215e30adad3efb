"""The limits table through the `ray` backend (docs/sandbox.md#limits-held): every case of
`tests/sandbox/limit_cases.py`, run by a driver process of the test cluster (`conftest.py`:
worker a on this machine's engine, worker b on a private dockerd), so each sandbox lives in a
node's host actor and every limit is held there, by the same code as locally, and raised in
the driver: the same outcomes, failure modes and unharmed host as on the docker backend."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cluster.conftest import ROOT
from tests.sandbox.limit_cases import CASES, check, outside_target

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]


def test_every_limit_holds_through_the_ray_backend(cluster, engines, engine_b, tmp_path):
    out = tmp_path / "seen.json"
    root = engines["a"].info()["DockerRootDir"]
    with outside_target(engines["a"]) as (ip, port):
        driver = subprocess.run(
            [
                sys.executable, "-m", "tests.sandbox.limit_cases", "--out", str(out),
                "--target", f"{ip}:{port}", "--engines", f",{engine_b.url}", "--disk-root", root,
            ],
            env=cluster.env(), cwd=ROOT, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    assert driver.returncode == 0, driver.stdout[-2000:] + driver.stderr[-4000:]
    seen = {case["name"]: case for case in json.loads(out.read_text())}
    for case in CASES:
        check(case, seen[case.name])
