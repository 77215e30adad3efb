"""The limits table on the docker backend (docs/sandbox.md#limits-held): every limit a task or
the settings state, pushed past inside a real sandbox on this machine's engine (overlay2 on
ext4 here: storage held by the meter), with its outcome, failure mode and the host unharmed.
The cases and their checks are `limit_cases.py`'s, shared with the ray backend's test."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.sandbox import SandboxConfig
from tests.sandbox.limit_cases import CASES, check, observe, outside_target

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def target(docker_client, base_image):
    with outside_target(docker_client) as address:
        yield address


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_limit_pushed_past_holds_and_the_host_is_unharmed(case, target, docker_client):
    root = docker_client.info()["DockerRootDir"]
    config = SandboxConfig(run_id="limits", start_timeout_s=300)
    seen = asyncio.run(asyncio.wait_for(observe(case, config, target, [None], root), 400))
    check(case, seen)
