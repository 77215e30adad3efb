"""`run_harbor(tasks, config, run_dir)`: tbrl's agent through real Harbor on this machine.

What it does, in order: refuse what cannot work here (a registry dataset, an in-process
model policy); make the Harbor image (`image.py`, cached) and tag local substitutes for the
public base images the tasks name (`provide_bases`); write the tasks as Harbor task folders
(`run_dir/harbor-tasks`, tbrl's own writer, so any task source works); run
`harbor run -p <tasks> -a tbrl_lib.harbor.agent:TbrlAgent -e docker` in a container of it,
with this checkout mounted read-only on PYTHONPATH, the engine's socket, host networking
(a policy server on the host's loopback answers) and the run folder mounted at its own
path (Harbor bind-mounts trial folders, which the host's engine resolves); then read the
job into `run_dir/results.json` (`job.py`).

Two things differ from `tbrl eval run` because Harbor cannot do them offline, and the run
says so (`NETWORK_NOTE`): the tasks are written with the network allowed, since Harbor's
Docker environment enforces "no network" only through an egress-control sidecar image
(`gogost/gost`) and a kernel probe image that it pulls from Docker Hub (refused:
`ValueError: network_mode='no-network' is not supported by EnvironmentType.DOCKER
environment`); and its verifier (`tests/test.sh`) installs pytest from PyPI where the image
has none. Left out: resuming a Harbor job (a rerun makes a new job; results.json is then
that job's), Harbor's `--max-retries` (an infra error is reported, not retried).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
from docker.errors import ImageNotFound
from requests.exceptions import RequestException

import tbrl_lib
from tbrl_lib.evaluate.results import RunConfig, RunResults
from tbrl_lib.harbor.image import HARBOR_VERSION, ensure_harbor_image
from tbrl_lib.harbor.job import read_job
from tbrl_lib.sandbox.base_images import family_of, recipe_hash, tag_substitute
from tbrl_lib.sandbox.engine import client as engine_client
from tbrl_lib.tasks.dockerfile import base_images as dockerfile_bases
from tbrl_lib.tasks.loader import write_tasks
from tbrl_lib.tasks.model import Task

AGENT_IMPORT_PATH = "tbrl_lib.harbor.agent:TbrlAgent"
SOCKET = "/var/run/docker.sock"
PASSED_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "HF_TOKEN")
"""Credentials the agent's policy may need, passed into Harbor's container when set."""
NETWORK_NOTE = (
    "Harbor here runs every task with the network allowed: offline it cannot enforce "
    "'no network' (its egress sidecar and probe images come from Docker Hub)"
)
IN_PROCESS_POLICIES = ("hf:", "vllm:")
COMPOSE_DIR_LABEL = "com.docker.compose.project.working_dir"


class HarborRunError(RuntimeError):
    """`harbor run` failed before any trial finished; the message has its last lines."""


def check_source(source: str) -> None:
    """Refuse, in one line, a source that is no folder or file here: a Harbor registry
    dataset name (`terminal-bench@2.0`) cannot be fetched offline."""
    if not Path(source).exists():
        raise ValueError(
            f"{source!r}: no such folder or file here; a Harbor registry dataset (e.g. "
            "terminal-bench@2.0) cannot be fetched offline (Harbor fails with `ValueError: "
            "Error getting dataset terminal-bench@2.0` from `ConnectError: [Errno -2] Name or "
            "service not known`): give a folder of Harbor tasks, or run `harbor run -d ...` "
            "on a machine with internet (docs/harbor.md)"
        )


def check_policy(spec: str) -> None:
    """Refuse policies that load a model in-process: Harbor's image has no torch."""
    if spec.startswith(IN_PROCESS_POLICIES):
        raise ValueError(
            f"--policy {spec}: Harbor's image runs no local model; serve it "
            "(`vllm serve FOLDER`) and pass --policy openai:http://127.0.0.1:8000/v1+NAME"
        )


def export_tasks(tasks: list[Task], out_dir: Path) -> Path:
    """The tasks as Harbor folders under `out_dir`, with the network allowed (`NETWORK_NOTE`)."""
    opened = [
        t.model_copy(update={"limits": t.limits.model_copy(update={"allow_internet": True})})
        for t in tasks
    ]
    write_tasks(opened, "harbor", out_dir, progress=False)
    return out_dir


def provide_bases(client: docker.DockerClient, tasks: list[Task]) -> list[str]:
    """Tag a local substitute (`base_images.tag_substitute`) for every public base image a
    task's Dockerfile names that this engine lacks (`t-bench/python-3-13:<any tag>`), so
    Harbor's plain `docker build` finds it offline as tbrl's own builds do (they rewrite the
    FROM line instead); returns the names tagged. Unknown families and digests are left to
    fail in Harbor's build, as the task's own defect."""
    tagged = []
    for name in sorted({base for task in tasks for base in dockerfile_bases(task)}):
        if family_of(name) is None or "@" in name:
            continue
        try:
            client.images.get(name)
        except ImageNotFound:
            tag_substitute(client, name, recipe_hash())
            tagged.append(name)
    return tagged


def harbor_argv(
    tasks_dir: Path, job_dir: Path, config: RunConfig, agent_kwargs: dict[str, str] | None = None
) -> list[str]:
    """`harbor run` for these tasks with tbrl's agent and the run's policy and limits;
    `agent_kwargs` become more `--ak KEY=VALUE` (e.g. `token_ids=true`)."""
    extra = [arg for k, v in (agent_kwargs or {}).items() for arg in ("--ak", f"{k}={v}")]
    return [
        "harbor", "run",
        "-p", str(tasks_dir),
        "-a", AGENT_IMPORT_PATH,
        "--ak", f"policy={config.policy}",
        "--ak", f"episode={config.episode.model_dump_json()}",
        "-e", "docker",
        "-o", str(job_dir.parent),
        "--job-name", job_dir.name,
        "-k", str(config.attempts),
        "-n", str(config.concurrency),
        "--timeout-multiplier", str(config.timeout_scale),
        "-y", "-q",
        *extra,
    ]  # fmt: skip


def run_timeout(tasks: list[Task], config: RunConfig) -> float:
    """An upper bound for the whole job: every trial's build, agent and test timeouts."""
    per_trial = sum(
        t.limits.build_timeout_sec
        + config.timeout_scale * (t.limits.agent_timeout_sec + t.limits.test_timeout_sec)
        for t in tasks
    )
    return per_trial * config.attempts / config.concurrency + 600


def run_harbor(
    tasks: list[Task],
    config: RunConfig,
    run_dir: Path,
    log: Callable[[str], object] = print,
    agent_kwargs: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> RunResults:
    """Run `tasks` through Harbor with tbrl's agent; `run_dir/results.json` (module docstring).
    Past `timeout_s` (default `run_timeout`) Harbor is stopped, what it left is removed, and
    `HarborRunError` says so."""
    check_policy(config.policy)
    run_dir = run_dir.resolve()
    client = engine_client(timeout=600)
    image, built_s = ensure_harbor_image(client, log)
    if built_s:
        log(f"built {image} in {built_s:.0f} s")
    for name in provide_bases(client, tasks):
        log(f"tagged a local substitute for {name} (tbrl images status lists it)")
    tasks_dir = export_tasks(tasks, run_dir / "harbor-tasks")
    job_dir = run_dir / "harbor-jobs" / datetime.now(UTC).strftime("job-%Y%m%d-%H%M%S")
    job_dir.parent.mkdir(parents=True, exist_ok=True)
    kwargs = {"timeout_scale": str(config.timeout_scale), **(agent_kwargs or {})}
    log(
        f"harbor run ({HARBOR_VERSION}) of {len(tasks)} task(s) x {config.attempts}; {NETWORK_NOTE}"
    )
    started = time.monotonic()
    container = client.containers.run(
        image,
        harbor_argv(tasks_dir, job_dir, config, kwargs),
        **_container_options(run_dir, job_dir),
    )
    timeout_s = run_timeout(tasks, config) if timeout_s is None else timeout_s
    try:
        status = container.wait(timeout=timeout_s)
    except RequestException as err:  # the wait's read timed out, or the engine went away
        container.stop(timeout=30)  # SIGTERM: Harbor stops its trials, then SIGKILL
        left = reap(client, run_dir)
        raise HarborRunError(
            f"harbor run did not finish within {timeout_s:.0f} s ({err}); stopped it and "
            f"removed {left} container(s) it left; log: {run_dir / 'harbor.log'}"
        ) from err
    finally:
        (run_dir / "harbor.log").write_bytes(container.logs())
        container.remove(force=True)
    reap(client, run_dir)
    if not list(job_dir.glob("*/result.json")):
        tail = "\n".join((run_dir / "harbor.log").read_text().strip().splitlines()[-15:])
        raise HarborRunError(
            f"harbor run exited {status.get('StatusCode')} with no trial results "
            f"(full log: {run_dir / 'harbor.log'}):\n{tail}"
        )
    results = read_job(job_dir, config, tasks, run_dir)
    results.wall_seconds = time.monotonic() - started
    results.save(run_dir)
    return results


def _container_options(run_dir: Path, job_dir: Path) -> dict[str, Any]:
    """Harbor's container: this checkout read-only on PYTHONPATH, the run folder at its own
    path, the engine (socket or DOCKER_HOST), the host's network, the policy's credentials."""
    repo = str(tbrl_lib.REPO_ROOT)
    volumes = {
        repo: {"bind": repo, "mode": "ro"},
        str(run_dir): {"bind": str(run_dir), "mode": "rw"},
    }
    env = {"PYTHONPATH": repo} | {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    if os.environ.get("DOCKER_HOST"):
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    else:
        volumes[SOCKET] = {"bind": SOCKET, "mode": "rw"}
    return {
        "detach": True,
        "network_mode": "host",
        "volumes": volumes,
        "environment": env,
        "working_dir": str(run_dir),
        "labels": {"tbrl.harbor": job_dir.name},
        "name": f"tbrl-harbor-{job_dir.name}-{os.getpid()}",
    }


def reap(client: docker.DockerClient, run_dir: Path) -> int:
    """Remove the containers and networks of Harbor's trials under `run_dir` (its compose
    projects' working directories are the exported tasks' `environment/` folders); returns
    how many containers. Harbor removes them itself when it ends normally."""
    prefix = str(run_dir) + "/"
    containers = [
        c
        for c in client.containers.list(all=True, filters={"label": COMPOSE_DIR_LABEL})
        if c.labels.get(COMPOSE_DIR_LABEL, "").startswith(prefix)
    ]
    projects = {c.labels.get("com.docker.compose.project") for c in containers}
    for c in containers:
        c.remove(force=True)
    for network in client.networks.list(filters={"label": "com.docker.compose.project"}):
        if network.attrs.get("Labels", {}).get("com.docker.compose.project") in projects:
            network.remove()
    return len(containers)
