"""Task images: build once per content hash, reuse everywhere after.

The tag is `tbrl-task/<safe task id>:<hash>` where the hash covers everything that goes
into the build (Dockerfile text, every context file's path and bytes, text or binary, and
`BUILD_RECIPE`, which names the base images' revision); `Task.safe_id` keeps ids Docker
refuses (upper case, `+`) usable. The Docker daemon is the cache: a tag that exists is not
rebuilt, by this process or any other. Concurrent builds of one hash wait for a single build
(an asyncio lock within the process, an `flock` on a file across processes on this machine).

The engine builds the Dockerfile with every FROM of a known public family (any tag) pointed
at that family's local image (`base_images.resolve`), so a build never depends on which image
a public name is tagged to on a shared engine; a prebuilt `image` of a family resolves the
same way.

A failure raises `ImageBuildError` (a `SandboxError`) whose first line says which step failed,
its command and the error lines it printed (`build_log`), followed by the end of that step's
output. Its kind says whose fault it is: `task_build_failed` (a failing step, a missing file,
a base image this engine cannot provide, a Dockerfile the engine cannot parse) and
`task_image_missing` (a prebuilt image that is not there) are the task's; `build_failed`
(the engine's error, a step that lost the network) and `build_timeout`
(`task.limits.build_timeout_sec`) are the infrastructure's.

Images carry labels `tbrl.task` (the original id) and `tbrl.content-hash`. Left out:
pulling from a registry (none is reachable here) and garbage-collecting old task images
(`docker image rm` of `tbrl-task/*` is safe: they rebuild on demand).
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import io
import os
import tarfile
import time
from pathlib import Path

from docker.errors import APIError, ImageNotFound

from tbrl_lib.docker.base_images import (
    FAMILIES,
    REVISION,
    SubstituteError,
    resolve,
)
from tbrl_lib.docker.build_log import BuildLog
from tbrl_lib.sandbox.backends.docker.hosts import Host, get_host
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.sandbox.config import DockerHost
from tbrl_lib.slow_notice import SLOW_AFTER_S, slow_notice
from tbrl_lib.tasks.dockerfile import base_images, rewrite_bases
from tbrl_lib.tasks.model import Task

BUILD_RECIPE = f"tbrl-image-v2+{REVISION}"
"""Bump to force every task image to rebuild (e.g. when the build context layout changes);
it carries the base images' revision, so new base images mean new task images."""
LOCK_DIR = Path(os.environ.get("TBRL_LOCK_DIR", "/tmp/tbrl-build-locks"))


class ImageBuildError(SandboxError):
    """A task image did not build; the message ends with the build log's tail."""


def image_hash(task: Task) -> str:
    """Content hash of everything that goes into the task's image build."""
    env = task.environment
    digest = hashlib.sha256()
    for part in (BUILD_RECIPE, env.dockerfile or "", env.image or ""):
        digest.update(part.encode())
        digest.update(b"\0")
    for path, data in env.context_files().items():
        digest.update(path.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:20]


def image_tag(task: Task) -> str:
    return f"tbrl-task/{task.safe_id}:{image_hash(task)}"


def build_context(task: Task, dockerfile: str | None = None) -> bytes:
    """The build context as a tar: Dockerfile (the task's, or `dockerfile` in its place) +
    the task's environment files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        text = task.environment.dockerfile if dockerfile is None else dockerfile
        files = {"Dockerfile": (text or "").encode(), **task.environment.context_files()}
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


_LOCKS: dict[tuple[int, str, str], asyncio.Lock] = {}
"""One lock per (event loop, host, tag): asyncio locks must not cross event loops."""


async def ensure_image(
    task: Task, host: DockerHost | Host | None = None, slow_after_s: float = SLOW_AFTER_S
) -> str:
    """Return an image name for `task` on `host`, building it when no cached build exists;
    a build that takes over `slow_after_s` says so (`slow_notice`)."""
    host = host if isinstance(host, Host) else get_host(host or DockerHost())
    env = task.environment
    if not env.dockerfile:
        assert env.image is not None
        image = (await host.call(_resolved, host, task, what=f"resolving {env.image}"))[env.image]
        if not await _exists(host, image):
            raise ImageBuildError(
                f"task {task.id}: image {image!r} is not on docker host {host.name} and no "
                "registry is reachable; build or load it there (docker load), or give the task "
                "a Dockerfile",
                kind="task_image_missing",
            )
        return image
    tag = image_tag(task)
    if await _exists(host, tag):
        return tag
    lock = _LOCKS.setdefault((id(asyncio.get_running_loop()), host.name, tag), asyncio.Lock())
    async with lock:
        if await _exists(host, tag):
            return tag
        await host.call(_build_locked, host, task, tag, slow_after_s, what=f"building {tag}")
    return tag


async def _exists(host: Host, name: str) -> bool:
    def get() -> bool:
        try:
            host.client.images.get(name)
            return True
        except ImageNotFound:
            return False

    return await host.call(get, what=f"looking up image {name}")


def _build_locked(host: Host, task: Task, tag: str, slow_after_s: float = SLOW_AFTER_S) -> None:
    """Build under a cross-process file lock; another process may have built it meanwhile."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    lock_path = LOCK_DIR / (
        hashlib.sha256(f"{host.name}|{tag}".encode()).hexdigest()[:24] + ".lock"
    )
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            host.client.images.get(tag)
            return
        except ImageNotFound:
            pass
        with slow_notice(f"building image {tag} for task {task.id}", slow_after_s):
            _build(host, task, tag)


def _resolved(host: Host, task: Task) -> dict[str, str]:
    """Each base image of `task` -> the image it builds on here (`base_images.resolve`)."""
    try:
        return {name: resolve(host.client, name) for name in base_images(task)}
    except SubstituteError as err:
        kind = "task_build_failed" if err.task_fault else "image_missing"
        raise ImageBuildError(f"task {task.id}: {err}", kind=kind) from err


def _build(host: Host, task: Task, tag: str) -> None:
    bases = _resolved(host, task)
    dockerfile = rewrite_bases(task.environment.dockerfile or "", bases)
    timeout = task.limits.build_timeout_sec
    deadline = time.monotonic() + timeout
    log = BuildLog()
    try:
        stream = host.client.api.build(
            fileobj=io.BytesIO(build_context(task, dockerfile)),
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            timeout=timeout,
            labels={"tbrl.task": task.id, "tbrl.content-hash": image_hash(task)},
        )
    except APIError as err:
        raise _refused(task, err) from err
    try:
        for chunk in stream:
            log.feed(chunk)
            if time.monotonic() > deadline:
                raise ImageBuildError(
                    f"task {task.id}: image build exceeded build_timeout_sec={timeout:.0f}s "
                    f"(raise limits.build_timeout_sec if the build is legitimately slow)\n"
                    + log.tail(),
                    kind="build_timeout",
                )
    except ImageBuildError:
        raise
    except APIError as err:
        raise _refused(task, err) from err
    except Exception as err:  # read timeout of the HTTP stream, connection loss
        if "timed out" in str(err).lower():
            raise ImageBuildError(
                f"task {task.id}: image build exceeded build_timeout_sec={timeout:.0f}s\n"
                + log.tail(),
                kind="build_timeout",
            ) from err
        raise
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    failure = log.failure()
    if failure is None:
        return
    summary = failure.summary()
    if failure.keyword == "FROM":
        image = next((k for k, v in bases.items() if f"FROM {v}" in failure.instruction), "")
        summary = (
            f"step {failure.step.split('/')[0]} `{failure.instruction}`: base image "
            f"{image or failure.instruction.split()[-1]} is not on this engine and "
            f"could not be pulled ({failure.error}); tbrl substitutes only "
            f"{', '.join(f.repository + ':*' for f in FAMILIES)}: load the image onto the "
            "engine (docker load) or start the Dockerfile from one of those"
        )
    raise ImageBuildError(
        f"task {task.id}: Dockerfile build failed at {summary}\n{failure.details()}",
        kind="task_build_failed" if failure.task_fault else "build_failed",
    )


def _refused(task: Task, err: APIError) -> ImageBuildError:
    """The engine refused the build request: a 4xx is the Dockerfile's (a parse error)."""
    message = getattr(err, "explanation", None) or str(err)
    status = getattr(err, "status_code", None) or 0
    if 400 <= status < 500:
        return ImageBuildError(
            f"task {task.id}: the engine cannot read the Dockerfile: {message}",
            kind="task_build_failed",
        )
    return ImageBuildError(
        f"task {task.id}: the engine refused the build: {message}", kind="build_failed"
    )
