"""Fixtures for synth tests: a real validator that removes the task images it built."""

from __future__ import annotations

import pytest


@pytest.fixture
def task_validator(docker_client, base_image):
    """`tbrl_lib.synth.batch_validate.task_validator`, recording tasks so their images go away."""
    from docker.errors import ImageNotFound

    from tbrl_lib.sandbox.images import image_tag
    from tbrl_lib.synth.batch_validate import task_validator as make

    seen = []
    inner = make(concurrency=3)

    async def validate(task):
        seen.append(task)
        return await inner(task)

    yield validate
    for task in seen:
        try:
            docker_client.images.remove(image_tag(task), force=True)
        except ImageNotFound:  # never built (validation stopped before) or already gone
            continue
