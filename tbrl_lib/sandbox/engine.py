"""Finding, and when allowed starting, the Docker engine.

`ensure_engine()` answers "is there a daemon I can talk to?" and, when run as root on a
machine where `dockerd` is installed but not running, starts it in the background and
waits for it. It never installs anything; when it cannot help it says exactly what to run.
`require_engine(purpose)` only asks, and refuses (one line, with the fix) when none answers:
commands that run sandboxes call it before anything else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException

DOCKERD_LOG = Path("/tmp/tbrl-dockerd.log")


class EngineUnavailable(RuntimeError):
    """No Docker engine answers; the message says how to get one."""


@dataclass(frozen=True)
class EngineInfo:
    version: str
    endpoint: str
    started_by_us: bool


def client(base_url: str | None = None, timeout: int = 120) -> docker.DockerClient:
    """A Docker client for `base_url` (unix://, tcp://, ssh://) or the environment's default."""
    if base_url:
        return docker.DockerClient(base_url=base_url, timeout=timeout)
    return docker.from_env(timeout=timeout)


def ping(base_url: str | None = None) -> EngineInfo | None:
    try:
        c = client(base_url, timeout=5)
        version = c.version().get("Version", "?")
        endpoint = c.api.base_url
        c.close()
        return EngineInfo(version=version, endpoint=endpoint, started_by_us=False)
    except (DockerException, OSError):
        return None


def require_engine(purpose: str = "this command") -> EngineInfo:
    """The engine's info, or `EngineUnavailable` saying that `purpose` needs one and how to
    start it. Commands that run sandboxes call this before doing anything else."""
    info = ping()
    if info is None:
        raise EngineUnavailable(f"{purpose} needs a Docker engine: {_how_to_fix()}")
    return info


def ensure_engine(start: bool = True, wait_s: float = 60.0) -> EngineInfo:
    """Return the engine's info, starting `dockerd` when we are root and may."""
    info = ping()
    if info:
        return info
    if not start:
        raise EngineUnavailable(_how_to_fix())
    dockerd = shutil.which("dockerd")
    if dockerd is None or os.geteuid() != 0 or os.environ.get("DOCKER_HOST"):
        raise EngineUnavailable(_how_to_fix())
    with DOCKERD_LOG.open("ab") as log:
        subprocess.Popen([dockerd], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        info = ping()
        if info:
            return EngineInfo(info.version, info.endpoint, started_by_us=True)
        time.sleep(0.5)
    raise EngineUnavailable(
        f"started dockerd but it did not answer within {wait_s:.0f}s; see {DOCKERD_LOG}"
    )


def _how_to_fix() -> str:
    if os.environ.get("DOCKER_HOST"):
        return (
            f"no Docker engine answers at DOCKER_HOST={os.environ['DOCKER_HOST']}; "
            "check that host, or unset DOCKER_HOST to use the local engine"
        )
    if shutil.which("dockerd") is None:
        return (
            "no Docker engine answers and dockerd is not installed. On Debian/Ubuntu run: "
            "sudo apt-get install -y docker.io && sudo dockerd &  (or: sudo systemctl start docker)"
        )
    if os.geteuid() != 0:
        return (
            "no Docker engine answers. Start it with: sudo systemctl start docker "
            "(or: sudo dockerd &), and add yourself to the docker group: "
            "sudo usermod -aG docker $USER"
        )
    return "no Docker engine answers; start it with: dockerd &"
