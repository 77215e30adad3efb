"""The third-party fixtures build on the substitutes as they would on the published images:
dated tags nobody pre-tagged build on their family's image, an Ubuntu-style Dockerfile pins
pytest==8.4.1 with pip over the Ubuntu substitute, a python-family one upgrades pip itself,
`apt-get install python3-pip` and the `python` link work with no network, binary data files
reach the image byte-exact, and a genuinely broken Dockerfile is the task's defect, reported
with its failing command and pip's error line. (Running them under the no-op and oracle
policies belongs to the evaluation's tests.) The pip installs need PyPI, which image builds
reach here; those tests are slow."""

from __future__ import annotations

import asyncio
import hashlib
import io
from pathlib import Path

import pytest

from tbrl_lib.docker import base_images
from tbrl_lib.sandbox.backends.docker.images import ImageBuildError, build_context, ensure_image
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.dockerfile import base_images as from_images
from tbrl_lib.tasks.dockerfile import rewrite_bases

pytestmark = pytest.mark.docker

FIXTURES = Path(__file__).parent / "fixtures" / "third_party"
PARQUET = FIXTURES / "harbor/R_package_Summary-Stats/environment/data/sales.parquet"


@pytest.fixture(scope="module")
def fixture_tasks():
    harbor, _ = load_tasks(FIXTURES / "harbor", progress=False)
    tb2, _ = load_tasks(FIXTURES / "tb2", progress=False)
    tb1, _ = load_tasks(FIXTURES / "tb1", "lenient", progress=False)
    return {task.id: task for task in [*harbor, *tb2, *tb1]}


def _run(client, image: str, script: str) -> str:
    return client.containers.run(
        image, ["bash", "-c", script], remove=True, network_mode="none", stderr=True
    ).decode()


@pytest.mark.slow
@pytest.mark.parametrize(
    "task_id",
    [
        "R_package_Summary-Stats",
        "py313-dated-logs",
        "hello-world",
        "sales-by-region",
        "word-count-py313",
    ],
)
def test_fixture_builds_on_its_familys_image(docker_client, base_image, fixture_tasks, task_id):
    task = fixture_tasks[task_id]
    tag = asyncio.run(ensure_image(task))
    assert tag.startswith(f"tbrl-task/{task.safe_id}:")
    (name,) = from_images(task)
    family = base_images.family_of(name)
    history = {layer["Id"] for layer in docker_client.api.history(tag)}
    assert docker_client.images.get(family.source).id in history, f"{name} not on {family.source}"
    if task_id == "R_package_Summary-Stats":
        out = _run(docker_client, tag, "command -v python && sha256sum /app/data/sales.parquet")
        assert "/usr/bin/python" in out
        assert hashlib.sha256(PARQUET.read_bytes()).hexdigest() in out
    if task_id == "py313-dated-logs":
        assert _run(docker_client, tag, "cat /app/data/logs/*.log | grep -c ERROR").strip() == "2"
    if task_id == "sales-by-region":  # the pin the old substitute's Debian pytest refused
        out = _run(docker_client, tag, "python -m pytest --version; pip3 show pytest")
        assert "pytest 8.4.1" in out and "/usr/local/lib/python3.13/dist-packages" in out, out
    if task_id == "word-count-py313":  # pip upgraded itself: pip's, not Debian's
        assert "pip 25.2 from /usr/local/lib/python3.13/" in _run(docker_client, tag, "pip -V")


def test_ubuntu_style_setup_builds_with_no_network(docker_client, base_image, fixture_tasks):
    """apt-get update fails quietly offline; python3-pip is already installed, so the install
    is a no-op; /usr/bin/python is free for the Dockerfile's own link."""
    task = fixture_tasks["sales-by-region"]
    setup = task.environment.dockerfile.split("# Test dependencies")[0]
    bases = {name: base_images.resolve(docker_client, name) for name in from_images(task)}
    log = []
    for chunk in docker_client.api.build(
        fileobj=io.BytesIO(build_context(task, rewrite_bases(setup, bases))),
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


@pytest.mark.slow
def test_broken_dockerfile_is_the_tasks_defect_with_pips_error_line(base_image, fixture_tasks):
    with pytest.raises(ImageBuildError) as info:
        asyncio.run(ensure_image(fixture_tasks["broken-test-deps"]))
    err = info.value
    assert err.kind == "task_build_failed" and err.task_fault and not err.infra
    first = str(err).splitlines()[0]
    assert "`RUN pip3 install --no-cache-dir --break-system-packages pytest==8.4.1 " in first
    assert "ERROR: No matching distribution found for iniconfig==9.0.0" in first
    assert "Collecting pytest==8.4.1" in str(err)  # the step's own output follows
