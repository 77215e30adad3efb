"""Task images: build once per content hash, reuse everywhere after.

The tag is `tbrl-task/<safe task id>:<hash>` where the hash covers everything that goes
into the build (Dockerfile text, every context file's path and bytes, text or binary, and
`BUILD_RECIPE`); `Task.safe_id` keeps ids Docker refuses (upper case, `+`) usable.
The Docker daemon is the cache: a tag that exists is not rebuilt, by this process or any
other. Concurrent builds of one hash wait for a single build (an asyncio lock within the
process, an `flock` on a file across processes on this machine). A build has a timeout
(`task.limits.build_timeout_sec`); a failure raises `ImageBuildError` (a `SandboxError`
with kind `build_failed`/`build_timeout`) carrying the last lines of the build log.

Before a build, every FROM image of a known public family that is missing locally gets its
offline substitute (`base_images.ensure_substitutes`), whatever its tag.

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

from docker.errors import ImageNotFound

from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.sandbox.base_images import SubstituteError, ensure_substitutes
from tbrl_lib.sandbox.config import DockerHost
from tbrl_lib.sandbox.hosts import Host, get_host
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.stats import base_images

BUILD_RECIPE = "tbrl-image-v1"
"""Bump to force every task image to rebuild (e.g. when the build context layout changes)."""
LOCK_DIR = Path(os.environ.get("TBRL_LOCK_DIR", "/tmp/tbrl-build-locks"))
LOG_TAIL_LINES = 30


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


def build_context(task: Task) -> bytes:
    """The build context as a tar: Dockerfile + the task's environment files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        dockerfile = (task.environment.dockerfile or "").encode()
        for name, data in {"Dockerfile": dockerfile, **task.environment.context_files()}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


_LOCKS: dict[tuple[int, str, str], asyncio.Lock] = {}
"""One lock per (event loop, host, tag): asyncio locks must not cross event loops."""


async def ensure_image(task: Task, host: DockerHost | Host | None = None) -> str:
    """Return an image name for `task` on `host`, building it when no cached build exists."""
    host = host if isinstance(host, Host) else get_host(host or DockerHost())
    env = task.environment
    if not env.dockerfile:
        assert env.image is not None
        if not await _exists(host, env.image):
            await host.call(_substitute, host, task, [env.image], what=f"substituting {env.image}")
        if not await _exists(host, env.image):
            raise SandboxError(
                f"task {task.id}: image {env.image!r} is not on docker host {host.name} and no "
                "registry is reachable; build or load it there (docker load), or give the task "
                "a Dockerfile",
                kind="image_missing",
            )
        return env.image
    tag = image_tag(task)
    if await _exists(host, tag):
        return tag
    lock = _LOCKS.setdefault((id(asyncio.get_running_loop()), host.name, tag), asyncio.Lock())
    async with lock:
        if await _exists(host, tag):
            return tag
        await host.call(_build_locked, host, task, tag, what=f"building {tag}")
    return tag


async def _exists(host: Host, name: str) -> bool:
    def get() -> bool:
        try:
            host.client.images.get(name)
            return True
        except ImageNotFound:
            return False

    return await host.call(get, what=f"looking up image {name}")


def _build_locked(host: Host, task: Task, tag: str) -> None:
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
        _build(host, task, tag)


def _substitute(host: Host, task: Task, names: list[str]) -> None:
    try:
        ensure_substitutes(host.client, names)
    except SubstituteError as err:
        raise ImageBuildError(f"task {task.id}: {err}", kind="image_missing") from err


def _build(host: Host, task: Task, tag: str) -> None:
    _substitute(host, task, base_images(task))
    timeout = task.limits.build_timeout_sec
    deadline = time.monotonic() + timeout
    log: list[str] = []
    api = host.client.api
    stream = api.build(
        fileobj=io.BytesIO(build_context(task)),
        custom_context=True,
        tag=tag,
        rm=True,
        forcerm=True,
        decode=True,
        timeout=timeout,
        labels={"tbrl.task": task.id, "tbrl.content-hash": image_hash(task)},
    )
    error = None
    try:
        for chunk in stream:
            if "stream" in chunk:
                log.extend(chunk["stream"].rstrip("\n").splitlines())
            if "error" in chunk:
                error = chunk.get("error", "").strip()
                log.append(error)
            del log[:-200]
            if time.monotonic() > deadline:
                raise ImageBuildError(
                    f"task {task.id}: image build exceeded build_timeout_sec={timeout:.0f}s "
                    f"(raise limits.build_timeout_sec if the build is legitimately slow)\n"
                    + _tail(log),
                    kind="build_timeout",
                )
    except ImageBuildError:
        raise
    except Exception as err:  # read timeout of the HTTP stream, connection loss
        if "timed out" in str(err).lower():
            raise ImageBuildError(
                f"task {task.id}: image build exceeded build_timeout_sec={timeout:.0f}s\n"
                + _tail(log),
                kind="build_timeout",
            ) from err
        raise
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    if error is not None:
        raise ImageBuildError(
            f"task {task.id}: Dockerfile build failed: {error}\n--- build log tail ---\n"
            + _tail(log),
            kind="build_failed",
        )


def _tail(log: list[str]) -> str:
    return "\n".join(log[-LOG_TAIL_LINES:])
