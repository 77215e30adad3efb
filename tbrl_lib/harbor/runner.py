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

import tbrl_lib
from tbrl_lib.docker.tool_containers import (
    ToolRun,
    ToolTimeout,
    provide_substitutes,
    reap_compose_projects,
    run_tool,
)
from tbrl_lib.evaluate.results import RunConfig, RunResults
from tbrl_lib.harbor.image import HARBOR_VERSION, ensure_harbor_image
from tbrl_lib.harbor.job import read_job
from tbrl_lib.tasks.dockerfile import base_images as dockerfile_bases
from tbrl_lib.tasks.loader import write_tasks
from tbrl_lib.tasks.model import Task

AGENT_IMPORT_PATH = "tbrl_lib.harbor.agent:TbrlAgent"
PASSED_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "HF_TOKEN")
"""Credentials the agent's policy may need, passed into Harbor's container when set."""
NETWORK_NOTE = (
    "Harbor here runs every task with the network allowed: offline it cannot enforce "
    "'no network' (its egress sidecar and probe images come from Docker Hub)"
)
IN_PROCESS_POLICIES = ("hf:", "vllm:")


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


def provide_bases(tasks: list[Task]) -> list[str]:
    """Tag a local substitute for every public base image a task's Dockerfile names that this
    engine lacks (`t-bench/python-3-13:<any tag>`), so Harbor's plain `docker build` finds it
    offline as tbrl's own builds do (they rewrite the FROM line instead); returns the names
    tagged."""
    return provide_substitutes(base for task in tasks for base in dockerfile_bases(task))


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
    image, built_s = ensure_harbor_image(log)
    if built_s:
        log(f"built {image} in {built_s:.0f} s")
    for name in provide_bases(tasks):
        log(f"tagged a local substitute for {name} (tbrl images status lists it)")
    tasks_dir = export_tasks(tasks, run_dir / "harbor-tasks")
    job_dir = run_dir / "harbor-jobs" / datetime.now(UTC).strftime("job-%Y%m%d-%H%M%S")
    job_dir.parent.mkdir(parents=True, exist_ok=True)
    kwargs = {"timeout_scale": str(config.timeout_scale), **(agent_kwargs or {})}
    log(
        f"harbor run ({HARBOR_VERSION}) of {len(tasks)} task(s) x {config.attempts}; {NETWORK_NOTE}"
    )
    started = time.monotonic()
    timeout_s = run_timeout(tasks, config) if timeout_s is None else timeout_s
    tool = ToolRun(
        image=image,
        argv=harbor_argv(tasks_dir, job_dir, config, kwargs),
        workdir=run_dir,
        read_only=[tbrl_lib.REPO_ROOT],
        env={"PYTHONPATH": str(tbrl_lib.REPO_ROOT)}
        | {k: os.environ[k] for k in PASSED_ENV if k in os.environ},
        labels={"tbrl.harbor": job_dir.name},
        name=f"tbrl-harbor-{job_dir.name}-{os.getpid()}",
    )
    try:
        exit_code = run_tool(tool, timeout_s, run_dir / "harbor.log")
    except ToolTimeout as err:
        left = reap_compose_projects(run_dir)
        raise HarborRunError(
            f"{err}; stopped it and removed {left} container(s) it left; "
            f"log: {run_dir / 'harbor.log'}"
        ) from err
    reap_compose_projects(run_dir)
    if not list(job_dir.glob("*/result.json")):
        tail = "\n".join((run_dir / "harbor.log").read_text().strip().splitlines()[-15:])
        raise HarborRunError(
            f"harbor run exited {exit_code} with no trial results "
            f"(full log: {run_dir / 'harbor.log'}):\n{tail}"
        )
    results = read_job(job_dir, config, tasks, run_dir)
    results.wall_seconds = time.monotonic() - started
    results.save(run_dir)
    return results
