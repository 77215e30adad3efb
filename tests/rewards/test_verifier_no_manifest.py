"""A pristine mount without its manifest is the infrastructure's failure: the verifier runs no
tests (their programs could not be restored) and reports `infra_error`, never a score.

The real race: the sandbox checks the volume (`ensure_pristine_volume`), then another process
removes or empties it before the container mounts it; the engine mounts what is left."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from docker.errors import ImageNotFound, NotFound

from tbrl_lib.rewards.verifier import _score, verify
from tbrl_lib.sandbox.backends.docker import pristine_volume
from tbrl_lib.sandbox.backends.docker.container import DockerSandbox
from tbrl_lib.sandbox.backends.docker.images import image_tag
from tbrl_lib.tasks.model import Task
from tests.rewards.test_verifier import TASK, frame, pristine

RAN = "/app/tests-ran"
"""Written by the task's test: present afterwards only if the tests ran."""


def test_an_infra_frame_is_an_infra_error_without_a_score():
    marker = "TBRL-REPORT-x"
    stdout = frame(marker, timed_out=False, junit=None, infra="the pristine volume ... holds no")
    report = _score(TASK, stdout, marker, pristine())
    assert report.infra_error and report.score == 0.0 and report.outcomes == {}
    assert report.error.startswith("verifier infrastructure: the pristine volume")


class EmptiedBeforeStart(DockerSandbox):
    """Empties its pristine volume after the check and before its container is created, as a
    `prune` or a stray `find -delete` in another process would."""

    def __init__(self, task: Task, client, base_image: str) -> None:
        super().__init__(task)
        self._client, self._base_image = client, base_image

    async def _create_and_start(self, image: str) -> None:
        self._client.containers.run(
            self._base_image,
            ["find", "/v", "-mindepth", "1", "-delete"],
            volumes={self._pristine_volume: {"bind": "/v", "mode": "rw"}},
            remove=True,
        )
        await super()._create_and_start(image)


@pytest.mark.docker
def test_an_emptied_pristine_volume_stops_the_verifier_as_infra(docker_client, base_image):
    tag = secrets.token_hex(4)
    # a program of its own, so the image gets a pristine volume no other test shares
    dockerfile = (
        f"FROM {base_image}\nRUN mkdir -p /app && printf '#!/bin/sh\\necho {tag}\\n' > "
        f"/usr/local/bin/tbrl-nm-{tag} && chmod +x /usr/local/bin/tbrl-nm-{tag}\n"
    )
    task = Task(
        id=f"no-manifest-{tag}",
        instruction="x",
        environment={"dockerfile": dockerfile},
        tests={"pytest": f"def test_a():\n    open('{RAN}', 'w').write('1')\n"},
    )

    async def go(sandbox: DockerSandbox):
        async with sandbox as sb:
            report = await verify(task, sb, timeout=60)
            ran = await sb.run(f"test -e {RAN} && echo ran || echo not-run")
            return sb._pristine_volume, report, ran.output

    volumes = []
    try:
        # control: the intact volume restores and the test runs
        volume, intact, ran = asyncio.run(asyncio.wait_for(go(DockerSandbox(task)), 600))
        volumes.append(volume)
        assert not intact.infra_error and intact.score == 1.0, intact.error
        assert "ran" in ran and "not-run" not in ran
        sandbox = EmptiedBeforeStart(task, docker_client, base_image)
        volume, report, ran = asyncio.run(asyncio.wait_for(go(sandbox), 600))
        volumes.append(volume)
        assert report.infra_error and report.score == 0.0 and report.outcomes == {}
        assert "holds no .manifest.json" in report.error and "/.tbrl-pristine" in report.error
        assert "not-run" in ran  # no test ran without the restore
    finally:
        for name in set(volumes):
            try:
                docker_client.volumes.get(name).remove(force=True)
            except NotFound:
                pass
        pristine_volume.forget()
        try:
            docker_client.images.remove(image_tag(task), force=True)
        except ImageNotFound:
            pass
