"""Slow operations say so: a line once they pass the threshold and one when they end; a fast
one prints nothing. The helper, a real model load (the tiny model) and a real image build."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest
from docker.errors import ImageNotFound

from tbrl_lib.slow_notice import slow_notice


def test_a_slow_block_says_so_and_when_it_ends():
    lines: list[str] = []
    with slow_notice("doing X", after_s=0.1, every_s=0.15, say=lines.append):
        time.sleep(0.4)
    assert lines[0] == "still doing X (0 s)..."
    assert len(lines) >= 3  # at 0.1 s, again at 0.25 s, and the end
    assert lines[-1] == "doing X: done after 0 s"


def test_a_fast_block_prints_nothing():
    lines: list[str] = []
    with slow_notice("doing X", after_s=0.5, say=lines.append):
        time.sleep(0.05)
    time.sleep(0.6)  # past the threshold: the timer is gone
    assert lines == []


def test_a_slow_block_that_fails_says_failed():
    lines: list[str] = []
    with pytest.raises(RuntimeError), slow_notice("doing X", after_s=0.05, say=lines.append):
        time.sleep(0.2)
        raise RuntimeError("boom")
    assert lines[-1] == "doing X: failed after 0 s"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tbrl_lib.models.tiny_corpus import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models"))


def test_a_model_load_past_the_threshold_prints_and_a_fast_one_does_not(tiny_model, capsys):
    from tbrl_lib.policies.hf import HFPolicy

    HFPolicy(tiny_model)  # the default 20 s: the tiny model loads well within it
    assert "loading model" not in capsys.readouterr().err
    HFPolicy(tiny_model, slow_after_s=0.0)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"still loading model {tiny_model} (")
    assert err[-1].startswith(f"loading model {tiny_model}: done after ")


@pytest.mark.docker
def test_a_slow_image_build_prints_and_a_cached_one_does_not(base_image, docker_client, capsys):
    from tbrl_lib.sandbox.backends.docker.images import ensure_image, image_tag
    from tbrl_lib.tasks.model import Task

    task = Task(
        id=f"slow-build-{secrets.token_hex(4)}",
        instruction="x",
        environment={"dockerfile": f"FROM {base_image}\nRUN sleep 2\n"},
        tests={"pytest": "def test_a():\n    pass\n"},
    )
    try:
        tag = asyncio.run(ensure_image(task, slow_after_s=0.5))
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith(f"still building image {tag} for task {task.id} (")
        assert any(
            line.startswith(f"building image {tag} for task {task.id}: done") for line in err
        )
        assert asyncio.run(ensure_image(task, slow_after_s=0.5)) == tag  # cached: no build
        assert "building image" not in capsys.readouterr().err
    finally:
        try:
            docker_client.images.remove(image_tag(task), force=True)
        except ImageNotFound:
            pass
