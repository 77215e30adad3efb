"""Task images: content-hash caching (also across processes), one build for concurrent
callers, failures that say which step failed and why and whose fault it is, a build timeout
that really stops the build."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
import uuid

import docker
import pytest

from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.sandbox import SandboxError
from tbrl_lib.sandbox.backends.docker.images import (
    ImageBuildError,
    build_context,
    ensure_image,
    image_hash,
    image_tag,
)
from tests.sandbox.conftest import make_task, run

# ---------------------------------------------------------------- unit (no Docker)


def test_hash_covers_dockerfile_and_every_context_file():
    a = make_task(dockerfile=f"FROM {BASE_IMAGE}\nCOPY f /f\n")
    b = a.model_copy(update={"environment": a.environment.model_copy(update={"files": {"f": "1"}})})
    c = a.model_copy(update={"environment": a.environment.model_copy(update={"files": {"f": "2"}})})
    d = make_task(dockerfile=f"FROM {BASE_IMAGE}\nCOPY f  /f\n")
    assert len({image_hash(t) for t in (a, b, c, d)}) == 4
    renamed = b.model_copy(update={"instruction": "other words", "id": b.id})
    assert image_hash(renamed) == image_hash(b)  # the instruction does not go into the image
    assert image_tag(b).startswith(f"tbrl-task/{b.id}:")


def test_build_context_holds_dockerfile_and_files():
    import io
    import tarfile

    task = make_task(dockerfile="FROM x\n")
    task = task.model_copy(
        update={
            "environment": task.environment.model_copy(update={"files": {"data/in.txt": "hello"}})
        }
    )
    with tarfile.open(fileobj=io.BytesIO(build_context(task))) as tar:
        assert sorted(tar.getnames()) == ["Dockerfile", "data/in.txt"]
        assert tar.extractfile("data/in.txt").read() == b"hello"


# ---------------------------------------------------------------- real engine


@pytest.fixture
def unique_task(docker_client, base_image):
    """A task whose image exists only for this test (removed afterwards)."""
    made = []

    def factory(body: str = "RUN echo built-$RANDOM > /stamp\n", **limits):
        task = make_task(
            f"img-test-{uuid.uuid4().hex[:8]}",
            dockerfile=f"FROM {BASE_IMAGE}\nARG nonce={uuid.uuid4().hex}\n{body}",
            **limits,
        )
        made.append(task)
        return task

    yield factory
    for task in made:
        for all_layers in (False, True):
            flt = {"label": f"tbrl.content-hash={image_hash(task)}"}
            for img in docker_client.api.images(all=all_layers, filters=flt):
                with contextlib.suppress(docker.errors.NotFound):  # gone with its child
                    docker_client.api.remove_image(img["Id"], force=True)


@pytest.mark.docker
def test_second_call_is_a_cache_hit_and_labels_are_set(docker_client, unique_task):
    task = unique_task()
    tag = run(ensure_image(task))
    labels = docker_client.images.get(tag).labels
    assert labels["tbrl.task"] == task.id and labels["tbrl.content-hash"] == image_hash(task)
    created = docker_client.images.get(tag).id
    t0 = time.monotonic()
    assert run(ensure_image(task)) == tag
    assert docker_client.images.get(tag).id == created and time.monotonic() - t0 < 2


@pytest.mark.docker
def test_concurrent_callers_get_one_build_in_process_and_across_processes(
    docker_client, unique_task
):
    task = unique_task("RUN sleep 1 && echo $RANDOM$RANDOM > /stamp\n")

    async def many():
        return await asyncio.gather(*(ensure_image(task) for _ in range(4)))

    script = (
        "import asyncio,sys; from tbrl_lib.sandbox.backends.docker.images import ensure_image; "
        "from tbrl_lib.tasks.model import Task; "
        "print(asyncio.run(ensure_image(Task.model_validate_json(sys.stdin.read()))))"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    other.stdin.write(task.model_dump_json())
    other.stdin.close()
    tags = run(many())
    assert other.wait(120) == 0 and other.stdout.read().strip() == tags[0]
    assert len(set(tags)) == 1
    images = docker_client.api.images(filters={"label": f"tbrl.content-hash={image_hash(task)}"})
    assert len(images) == 1, f"expected one build, found {len(images)} images with this hash"


@pytest.mark.docker
def test_failing_step_is_the_tasks_defect_and_says_what_failed(unique_task):
    """The first line names the task, the failing step and its command, and pip's error
    lines (not the earlier steps' output); the rest is the end of that step's output."""
    task = unique_task(
        "RUN echo an-earlier-step\n"
        "RUN echo installing && pip install --no-index --break-system-packages iniconfig==9.0.0\n"
        "RUN echo never-runs\n"
    )
    with pytest.raises(ImageBuildError) as info:
        run(ensure_image(task))
    err = info.value
    assert err.kind == "task_build_failed" and err.task_fault and not err.infra
    first, *rest = str(err).splitlines()
    assert first.startswith(f"task {task.id}: Dockerfile build failed at step 4 ")
    assert "`RUN echo installing && pip install " in first
    assert "exited 1: ERROR: Could not find a version that satisfies the requirement " in first
    assert "ERROR: No matching distribution found for iniconfig==9.0.0" in first
    assert "an-earlier-step" not in str(err) and "installing" in rest


@pytest.mark.docker
@pytest.mark.parametrize(
    "body, expected",
    [
        (
            "COPY missing.txt /app/\n",
            "`COPY missing.txt /app/` failed: COPY failed: file not found",
        ),
        ("RUNN true\n", "the engine cannot read the Dockerfile: dockerfile parse error line 3"),
    ],
)
def test_a_dockerfile_the_engine_cannot_follow_is_the_tasks_defect(unique_task, body, expected):
    task = unique_task(body)
    with pytest.raises(ImageBuildError) as info:
        run(ensure_image(task))
    assert info.value.kind == "task_build_failed" and expected in str(info.value), info.value


@pytest.mark.docker
def test_a_base_image_of_no_family_that_is_not_here_is_refused_clearly(base_image):
    task = make_task(f"img-test-{uuid.uuid4().hex[:8]}", dockerfile="FROM example.invalid/x:1\n")
    with pytest.raises(ImageBuildError) as info:
        run(ensure_image(task))
    first = str(info.value).splitlines()[0]
    assert info.value.kind == "task_build_failed", info.value
    assert "base image example.invalid/x:1 is not on this engine and could not be pulled" in first
    assert "ghcr.io/laude-institute/t-bench/ubuntu-24-04:*" in first and "docker load" in first


@pytest.mark.docker
def test_build_timeout_stops_the_build(docker_client, unique_task):
    task = unique_task("RUN sleep 60\n", build_timeout_sec=3)
    t0 = time.monotonic()
    with pytest.raises(ImageBuildError) as info:
        run(ensure_image(task))
    assert info.value.kind == "build_timeout" and time.monotonic() - t0 < 15
    assert "build_timeout_sec" in str(info.value)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # the daemon cancels the RUN step's container
        running = [c for c in docker_client.api.containers() if "sleep 60" in str(c.get("Command"))]
        if not running:
            break
        time.sleep(0.5)
    assert not running, "the build kept running after its timeout"


@pytest.mark.docker
def test_missing_prebuilt_image_is_a_clear_error(base_image):
    task = make_task(dockerfile=None, image="tbrl-test/does-not-exist:1")
    with pytest.raises(SandboxError, match="docker load") as info:
        run(ensure_image(task))
    assert info.value.kind == "task_image_missing" and info.value.task_fault
    assert run(ensure_image(make_task(dockerfile=None, image=base_image))) == base_image
    family = make_task(dockerfile=None, image="ghcr.io/laude-institute/t-bench/python-3-13:2099")
    assert run(ensure_image(family)) == base_image  # a prebuilt family image resolves too
