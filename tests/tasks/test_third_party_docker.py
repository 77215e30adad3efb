"""The third-party fixtures build offline: a dated Ubuntu tag and a dated Python tag nobody
pre-tagged get their substitutes on demand, an Ubuntu-style Dockerfile installs python3-pip
and links `python` with no network, and the binary data files reach the image byte-exact.
(Running them under the no-op and oracle policies belongs to the rollout module's tests.)"""

from __future__ import annotations

import asyncio
import hashlib
import io
from pathlib import Path

import pytest

from tbrl_lib.sandbox import base_images, ensure_image
from tbrl_lib.sandbox.images import build_context
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.stats import base_images as from_images

pytestmark = pytest.mark.docker

FIXTURES = Path(__file__).parent / "fixtures" / "third_party"
PARQUET = FIXTURES / "harbor/R_package_Summary-Stats/environment/data/sales.parquet"


@pytest.fixture(scope="module")
def fixture_tasks():
    harbor, _ = load_tasks(FIXTURES / "harbor", progress=False)
    tb1, _ = load_tasks(FIXTURES / "tb1", "lenient", progress=False)
    return {task.id: task for task in [*harbor, *tb1]}


def _run(client, image: str, script: str) -> str:
    return client.containers.run(
        image, ["bash", "-c", script], remove=True, network_mode="none", stderr=True
    ).decode()


@pytest.mark.parametrize("task_id", ["R_package_Summary-Stats", "py313-dated-logs", "hello-world"])
def test_fixture_builds_through_the_task_image_path(
    docker_client, base_image, fixture_tasks, task_id
):
    task = fixture_tasks[task_id]
    tag = asyncio.run(ensure_image(task))
    assert tag.startswith(f"tbrl-task/{task.safe_id}:")
    for name in from_images(task):
        labels = docker_client.images.get(name).labels
        assert labels[base_images.LABEL_SUBSTITUTE] == name  # substituted, whatever the tag
    if task_id == "R_package_Summary-Stats":
        out = _run(docker_client, tag, "command -v python && sha256sum /app/data/sales.parquet")
        assert "/usr/bin/python" in out
        assert hashlib.sha256(PARQUET.read_bytes()).hexdigest() in out
    if task_id == "py313-dated-logs":
        assert _run(docker_client, tag, "cat /app/data/logs/*.log | grep -c ERROR").strip() == "2"


def test_ubuntu_style_dockerfile_builds_with_no_network(docker_client, base_image, fixture_tasks):
    """apt-get update fails quietly offline; python3-pip is already installed, so the install
    is a no-op; /usr/bin/python is free for the Dockerfile's own link."""
    task = fixture_tasks["R_package_Summary-Stats"]
    base_images.ensure_substitutes(docker_client, from_images(task))
    log = []
    for chunk in docker_client.api.build(
        fileobj=io.BytesIO(build_context(task)),
        custom_context=True,
        network_mode="none",
        rm=True,
        forcerm=True,
        decode=True,
        tag="tbrl-test/offline-ubuntu-fixture:latest",
    ):
        log.append(chunk.get("stream", "") + chunk.get("error", ""))
        assert "error" not in chunk, "".join(log)[-2000:]
    docker_client.images.remove("tbrl-test/offline-ubuntu-fixture:latest", force=True)
