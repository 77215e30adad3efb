"""Finding, and when allowed starting, the Docker engine.

`ensure_engine()` answers "is there a daemon I can talk to?" and, when run as root on a
machine where `dockerd` is installed but not running, starts it in the background and
waits for it. It never installs anything; when it cannot help it says exactly what to run.
`require_engine(purpose)` only asks, and refuses (one line, with the fix) when none answers:
commands that run sandboxes call it before anything else. `wait_for_engine(...)` rides out an
engine that stopped answering in the middle of a run (a restart): it waits, bounded and
saying so, and past the bound raises `EngineOutage` with the way to resume. Evaluation
and training reach it through `DockerBackend.wait` (`SandboxBackend.wait`) after a rollout
fails with an infra error; how long they wait is `SandboxConfig.engine_wait_s`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException
from tenacity import AsyncRetrying, Retrying, retry_if_result, stop_after_delay, wait_fixed
from tqdm.auto import tqdm

from tbrl_lib.engines import EngineOutage, EngineUnavailable

DOCKERD_LOG = Path("/tmp/tbrl-dockerd.log")


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
        raise EngineUnavailable(f"{purpose} needs a Docker engine: {how_to_fix()}")
    return info


def ensure_engine(start: bool = True, wait_s: float = 60.0) -> EngineInfo:
    """Return the engine's info, starting `dockerd` when we are root and may."""
    info = ping()
    if info:
        return info
    if not start:
        raise EngineUnavailable(how_to_fix())
    dockerd = shutil.which("dockerd")
    if dockerd is None or os.geteuid() != 0 or os.environ.get("DOCKER_HOST"):
        raise EngineUnavailable(how_to_fix())
    with DOCKERD_LOG.open("ab") as log:
        subprocess.Popen([dockerd], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    info = _until_answered(Retrying, wait_s, every_s=0.5)(ping)
    if info is None:
        raise EngineUnavailable(
            f"started dockerd but it did not answer within {wait_s:.0f}s; see {DOCKERD_LOG}"
        )
    return EngineInfo(info.version, info.endpoint, started_by_us=True)


async def wait_for_engine(
    why: str, wait_s: float, who: str, resume: str, base_url: str | None = None
) -> bool:
    """Return False at once while the engine answers (`base_url`; None: the local one, or
    DOCKER_HOST's). Else say so, ask again every few seconds for up to `wait_s`, say when it
    is back and return True; past `wait_s` raise `EngineOutage`.
    `why`: the error that made the caller ask; `who`: the command, first in every message;
    `resume`: what to do after the outage (ends the error's one line)."""
    if await asyncio.to_thread(ping, base_url) is not None:
        return False
    where = f" at {base_url}" if base_url else ""
    tqdm.write(
        f"{who}: the Docker engine{where} does not answer ({why}); waiting up to {wait_s:.0f}s"
    )
    retrying = _until_answered(AsyncRetrying, wait_s, every_s=max(0.1, min(5.0, wait_s)))
    if await retrying(asyncio.to_thread, ping, base_url) is None:
        raise EngineOutage(
            f"the Docker engine{where} stopped answering ({why}) and did not come back within "
            f"{wait_s:.0f}s; {resume}"
        )
    tqdm.write(f"{who}: the Docker engine{where} answers again")
    return True


def _until_answered(retrying: type[Retrying] | type[AsyncRetrying], wait_s: float, every_s: float):
    """tenacity's loop for "ping until it answers": the answer, or None past `wait_s`."""
    return retrying(
        stop=stop_after_delay(wait_s),
        wait=wait_fixed(every_s),
        retry=retry_if_result(lambda info: info is None),
        retry_error_callback=lambda state: None,
    )


def how_to_fix() -> str:
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
