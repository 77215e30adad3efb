"""One-shot tool containers on this machine's engine: an image built from a recipe text, a
container that runs one command against the engine itself (its socket mounted, or
DOCKER_HOST passed), and the compose projects such a tool leaves.

This is what a harness that drives Docker itself needs from tbrl (Harbor, `tbrl eval
harbor`): it is not a sandbox, so it stands beside the backend's containers rather than
behind `SandboxBackend`, and keeps the `docker` SDK inside this package. Left out: registries
(images are built here, never pulled) and remote engines other than DOCKER_HOST.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from docker.errors import DockerException, ImageNotFound
from requests.exceptions import RequestException

from tbrl_lib.docker import base_images
from tbrl_lib.docker.engine import client as engine_client

SOCKET = "/var/run/docker.sock"
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
COMPOSE_DIR_LABEL = "com.docker.compose.project.working_dir"
LABEL_RECIPE = "tbrl.recipe"


class ToolTimeout(RuntimeError):
    """The tool container ran past its time limit; it was stopped and removed."""


def ensure_recipe_image(
    name: str, recipe: str, recipe_hash: str, log: Callable[[str], object] = print
) -> float:
    """Build `name` from the Dockerfile text `recipe` on top of the offline base images
    (bootstrapped first) unless it exists with label `tbrl.recipe == recipe_hash`; returns
    the seconds spent building (0 when cached). A failed build raises `RuntimeError`."""
    client = engine_client(timeout=900)
    try:
        if client.images.get(name).labels.get(LABEL_RECIPE) == recipe_hash:
            return 0.0
    except ImageNotFound:
        pass
    base_images.bootstrap(client, log=log)  # a no-op when current
    log(f"building {name}")
    started = time.monotonic()
    try:
        client.images.build(
            fileobj=io.BytesIO(recipe.encode()),
            tag=name,
            labels={LABEL_RECIPE: recipe_hash},
            rm=True,
            forcerm=True,
        )
    except DockerException as err:
        raise RuntimeError(f"building the image {name} failed: {err}") from err
    return time.monotonic() - started


def image_size_bytes(name: str) -> int:
    return int(engine_client().images.get(name).attrs["Size"])


def provide_substitutes(names: Iterable[str]) -> list[str]:
    """Tag a local substitute (`base_images.tag_substitute`) for every public base image in
    `names` that this engine lacks and whose family tbrl knows, so a plain `docker build` of
    an unmodified Dockerfile finds it offline; returns the names tagged. Unknown families
    and digests are left alone (their build fails as the task's own defect)."""
    client = engine_client()
    tagged = []
    for name in sorted(set(names)):
        if base_images.family_of(name) is None or "@" in name:
            continue
        try:
            client.images.get(name)
        except ImageNotFound:
            base_images.tag_substitute(client, name, base_images.recipe_hash())
            tagged.append(name)
    return tagged


@dataclass
class ToolRun:
    """One command in a tool container (see `run_tool`)."""

    image: str
    argv: list[str]
    workdir: Path
    """Mounted read-write at its own path and the container's working directory."""
    read_only: list[Path] = field(default_factory=list)
    """Mounted read-only at their own paths."""
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    name: str = ""


def run_tool(run: ToolRun, timeout_s: float, log_file: Path) -> int:
    """Run `run.argv` in a container of `run.image` with the host's network and this engine
    (its socket, or DOCKER_HOST), the folders at their own paths (the tool bind-mounts
    paths the host's engine must resolve); wait at most `timeout_s`. The container's output
    goes to `log_file` and the container is removed whatever happens. Returns the exit code;
    past the limit it is stopped (SIGTERM, then SIGKILL 30 s later) and `ToolTimeout` raised."""
    client = engine_client(timeout=600)
    volumes = {str(run.workdir): {"bind": str(run.workdir), "mode": "rw"}}
    volumes |= {str(p): {"bind": str(p), "mode": "ro"} for p in run.read_only}
    env = dict(run.env)
    if os.environ.get("DOCKER_HOST"):
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    else:
        volumes[SOCKET] = {"bind": SOCKET, "mode": "rw"}
    container = client.containers.run(
        run.image,
        run.argv,
        detach=True,
        network_mode="host",
        volumes=volumes,
        environment=env,
        working_dir=str(run.workdir),
        labels=run.labels,
        name=run.name or None,
    )
    try:
        status = container.wait(timeout=timeout_s)
    except RequestException as err:  # the wait's read timed out, or the engine went away
        container.stop(timeout=30)
        raise ToolTimeout(f"{run.argv[0]} did not finish within {timeout_s:.0f} s ({err})") from err
    finally:
        log_file.write_bytes(container.logs())
        container.remove(force=True)
    return int(status.get("StatusCode", -1))


def reap_compose_projects(under: Path) -> int:
    """Remove the containers and networks of every compose project whose working directory
    lies under `under` (what a tool stopped mid-run leaves); returns how many containers."""
    client = engine_client()
    prefix = str(under) + "/"
    containers = [
        c
        for c in client.containers.list(all=True, filters={"label": COMPOSE_DIR_LABEL})
        if c.labels.get(COMPOSE_DIR_LABEL, "").startswith(prefix)
    ]
    projects = {c.labels.get(COMPOSE_PROJECT_LABEL) for c in containers}
    for c in containers:
        c.remove(force=True)
    for network in client.networks.list(filters={"label": COMPOSE_PROJECT_LABEL}):
        if network.attrs.get("Labels", {}).get(COMPOSE_PROJECT_LABEL) in projects:
            network.remove()
    return len(containers)
