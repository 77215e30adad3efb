"""Pristine volumes: one per content, not per image, and a prune that frees them.

Every procedural instance and most test tasks are images that differ from their base only in
/app, /tests or labels; each used to get its own ~90 MB copy of the base's programs and
Python packages (one suite run left 123 volumes, 10.9 GB). These tests hold the sharing and
its limit: an image whose Dockerfile changes a mirrored tree gets a copy of its own.

A test owns what it deletes: the volumes it removes or prunes are made from content of its
own (`own_volume`: a program with a random name), never the shared base's volume that another
run on the same engine may be mounting (that failed with 409, volume in use), and it removes
them and their images at the end."""

from __future__ import annotations

import asyncio
import uuid

import docker
import pytest

from tbrl_lib.sandbox.backends.docker import pristine_volume
from tbrl_lib.sandbox.backends.docker.hosts import get_host
from tbrl_lib.sandbox.backends.docker.images import ensure_image
from tbrl_lib.sandbox.backends.docker.runtime_volume import ensure_runtime_volume
from tbrl_lib.sandbox.config import DockerHost
from tests.sandbox.conftest import make_task

pytestmark = pytest.mark.docker


def _volume_for(dockerfile: str, task_id: str) -> str:
    async def go() -> str:
        host = get_host(DockerHost())
        runtime = await ensure_runtime_volume(host)
        image = await ensure_image(make_task(task_id, dockerfile=dockerfile), host)
        return await pristine_volume.ensure_pristine_volume(host, image, runtime)

    return asyncio.run(asyncio.wait_for(go(), 300))


@pytest.fixture
def own_volume(base_image, docker_client):
    """`make(name)`: a pristine volume of this test's own (unique content), built as a task's
    image would be; every volume and image it made is removed at the end."""
    made: list[tuple[str, str]] = []

    def make(name: str) -> str:
        token = uuid.uuid4().hex[:12]
        dockerfile = f"FROM {base_image}\nRUN mkdir -p /app && echo {token} > /usr/local/bin/tbrl-pv-{token}\n"
        volume = _volume_for(dockerfile, f"{name}-{token}")
        made.append((volume, dockerfile))
        return volume

    make.dockerfile = lambda volume: dict(made)[volume]
    yield make
    for volume, _ in made:
        try:
            docker_client.volumes.get(volume).remove(force=True)
        except docker.errors.NotFound:
            pass
    for image in docker_client.images.list(filters={"reference": "tbrl-task/pv-own-*"}):
        docker_client.images.remove(image.id, force=True)
    pristine_volume.forget()


def test_images_that_differ_outside_the_mirrored_trees_share_one_volume(base_image):
    base = f"FROM {base_image}\n"
    one = _volume_for(base + "RUN mkdir -p /app && echo one > /app/a.txt\n", "pv-app-one")
    two = _volume_for(base + "RUN mkdir -p /app && echo two > /app/b.txt\n", "pv-app-two")
    assert one == two


def test_an_image_that_changes_a_program_or_package_gets_its_own_volume(base_image, docker_client):
    base = f"FROM {base_image}\n"
    plain = _volume_for(base + "RUN mkdir -p /app\n", "pv-plain")
    program = _volume_for(
        base + "RUN printf '#!/bin/sh\\necho hi\\n' > /usr/local/bin/hi && chmod +x "
        "/usr/local/bin/hi\n",
        "pv-program",
    )
    package = _volume_for(
        base + "RUN echo 'X = 1' > \"$(ls -d /usr/lib/python3/dist-packages)/tbrl_pv_pkg.py\"\n",
        "pv-package",
    )
    assert len({plain, program, package}) == 3
    # the copy holds what the image that made the volume holds
    out = docker_client.containers.run(
        base_image,
        [
            "sh",
            "-c",
            "ls /v/usr/local/bin/hi /v/usr/lib/python3/dist-packages/tbrl_pv_pkg.py; true",
        ],
        volumes={program: {"bind": "/v", "mode": "ro"}},
        remove=True,
        stderr=True,
    ).decode()
    # its own program, not the other image's package
    assert "/v/usr/local/bin/hi" in out and "No such file" in out


def test_prune_removes_unused_volumes_and_keeps_mounted_ones(base_image, docker_client, own_volume):
    name = own_volume("pv-own-prune")
    holder = docker_client.containers.create(
        base_image, ["sleep", "60"], volumes={name: {"bind": "/v", "mode": "ro"}}
    )
    stray = pristine_volume.volume_name(f"unlabelled-test-{uuid.uuid4().hex[:8]}")
    try:
        removed, in_use = pristine_volume.prune(docker_client, only={name})
        assert removed == [] and in_use == 1
        docker_client.volumes.get(name)  # still there
    finally:
        holder.remove(force=True)
    docker_client.volumes.create(stray)
    removed, in_use = pristine_volume.prune(docker_client, only={name, stray})
    # the stray: made by the engine at a mount of a removed one, no label: pruned by name
    assert sorted(removed) == sorted([name, stray]) and in_use == 0
    # the in-process cache forgot it: the next sandbox rebuilds instead of mounting nothing
    assert _volume_for(own_volume.dockerfile(name), "pv-own-prune-again") == name
    docker_client.volumes.get(name)


def test_a_volume_removed_behind_the_process_is_rebuilt_not_mounted_empty(
    base_image, docker_client, own_volume, tbrl
):
    """`tbrl docker reap --caches` in another process removes a volume this process has
    cached: the next sandbox finds it gone and rebuilds it (an empty auto-created volume
    would leave the verifier without the image's copy)."""
    name = own_volume("pv-own-behind")
    docker_client.volumes.get(name).remove()  # as another process's prune would
    assert _volume_for(own_volume.dockerfile(name), "pv-own-behind-again") == name
    listing = docker_client.containers.run(
        base_image, ["ls", "-a", "/v"], volumes={name: {"bind": "/v", "mode": "ro"}}, remove=True
    ).decode()
    assert ".manifest.json" in listing and ".ready" in listing
    result = tbrl("docker", "reap", "--caches")  # unused volumes only: in-use ones are kept
    assert result.code == 0 and "pristine volumes; kept" in result.out
