"""The parts of `tbrl_lib.harbor.runner` that need Docker but not Harbor: the public base
images a task names are provided locally before Harbor builds it, and the `harbor run`
command line carries the run's policy, limits and agent options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbrl_lib.docker.base_images import LABEL_SUBSTITUTE
from tbrl_lib.evaluate.results import RunConfig
from tbrl_lib.harbor.runner import AGENT_IMPORT_PATH, harbor_argv, provide_bases
from tbrl_lib.tasks.model import Environment, Task
from tbrl_lib.tasks.model import Tests as TaskTests


@pytest.mark.docker
def test_a_public_base_image_missing_here_gets_a_local_substitute(docker_client, base_image):
    """Harbor builds a task's Dockerfile as written, so a `t-bench/python-3-13` tag the
    engine lacks is tagged on the offline base image first (tbrl's own builds rewrite it)."""
    missing = "ghcr.io/laude-institute/t-bench/python-3-13:20991231-tbrl-test"
    task = Task(
        id="odd-tag",
        instruction="x",
        environment=Environment(dockerfile=f"FROM {missing}\nFROM debian:13 AS other\n"),
        tests=TaskTests(script="exit 0\n"),
    )
    try:
        assert provide_bases([task]) == [missing]  # debian:13: no family
        assert docker_client.images.get(missing).labels[LABEL_SUBSTITUTE] == missing
        assert provide_bases([task]) == []  # present now: nothing to do
    finally:
        docker_client.images.remove(missing)


def test_harbor_argv_carries_policy_limits_attempts_and_agent_options():
    config = RunConfig(
        policy="noop", attempts=2, concurrency=3, timeout_scale=1.5, episode={"max_turns": 7}
    )
    argv = harbor_argv(Path("/r/tasks"), Path("/r/jobs/job-1"), config, {"token_ids": "true"})
    pairs = list(zip(argv, argv[1:]))
    assert argv[:2] == ["harbor", "run"] and ("-a", AGENT_IMPORT_PATH) in pairs
    assert ("-p", "/r/tasks") in pairs and ("-o", "/r/jobs") in pairs
    assert ("--job-name", "job-1") in pairs and ("-k", "2") in pairs and ("-n", "3") in pairs
    assert ("--timeout-multiplier", "1.5") in pairs
    options = [value for flag, value in pairs if flag == "--ak"]
    assert "policy=noop" in options and "token_ids=true" in options
    episode = json.loads(next(o for o in options if o.startswith("episode=")).split("=", 1)[1])
    assert episode["max_turns"] == 7
