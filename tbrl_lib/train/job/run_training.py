"""`run_training(config, out_dir, resume)`: the one entry point notebook 04 calls to train,
wherever the run executes (`placement.py`).

Here: `train()` in this process. In a Slurm allocation (the notebook is the batch job:
`sbatch job.sbatch` runs it under papermill, or papermill inside `salloc`): the job's roles
start on the allocation's nodes as `srun` steps (`plan/job_steps.py`), in order, each waited
for: the Ray cluster for sandboxes (the head, then the workers, until every node's units are
in), the vLLM server (until its /health answers), then training (`accelerate launch` on every
training node). Rank 0's output streams into the notebook line by line as it comes; every
step's output goes to `<run>/job/` (`training.log`, `ray-node-<i>.log`, `vllm-server.log`).
When training ends, or fails, or the kernel is interrupted, every step started is stopped
(Slurm ends the step's processes: nothing of the job keeps running) and the Ray nodes' temp
dirs on this machine are removed; the summary returned is rank 0's `summary.json`, and
`job.json` records the job, its roles and where the sandboxes ran.

Left out: restarting a Ray node that dies mid-run (its rollouts are masked; the others go
on), a job whose nodes do not share the run folder's filesystem.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tbrl_lib.run_folder import run_dir
from tbrl_lib.slurm import allocation
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import overrides_of
from tbrl_lib.train.grpo.training import train
from tbrl_lib.train.job.placement import placement
from tbrl_lib.train.plan.job_steps import JobSteps, Step, job_steps
from tbrl_lib.train.plan.launch import SERVER_WAIT_S, node_count, write_accelerate_config
from tbrl_lib.train.plan.ray_nodes import NodePorts, free_block, worker_ports
from tbrl_lib.train.plan.scripts import RAY_WAIT_S
from tbrl_lib.train.vllm.server import answers

RAY_TRIES = 3
"""Starts of one Ray node before the job gives up: on a loaded machine a raylet may give up
waiting for its agents (`ray start` then exits), and another start usually makes it."""
STOP_WAIT_S = 30.0
POLL_S = 3.0


class TrainingJobFailed(RuntimeError):
    """A role of the job failed; the message names it, its last lines and its log."""


def run_training(config: TrainConfig, out_dir: str | Path = "", resume: str = "") -> dict[str, Any]:
    """Train as `config` says, here or on the allocation's nodes; the run's summary."""
    if placement(config) == "here":
        return train(config, out_dir=out_dir, resume=resume)
    out = run_dir(out_dir, f"train-{config.preset}")
    return Job(config, out, resume).run()


class Job:
    """One run's roles on the allocation's nodes (see module docstring)."""

    def __init__(self, config: TrainConfig, out: Path, resume: str) -> None:
        self.config, self.out, self.folder = config, out, out / "job"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.job = allocation()
        if self.job is None:
            raise RuntimeError("run_training's job path needs a Slurm allocation")
        ports = None
        if config.rollout.sandbox.backend == "ray":
            size = node_count(config) * (NodePorts(0, worker_ports(config)).per_node)
            ports = NodePorts(free_block(size), worker_ports(config))
        self.ray_temp = f"/tmp/tbrl-ray-{self.job.job_id}-{os.getpid()}"  # + "-<node index>"
        accelerate = write_accelerate_config(  # a rendezvous port free on this node (node 0)
            config, self.folder / "accelerate.yaml", free_block(1)
        )
        self.steps: JobSteps = job_steps(
            config,
            self.job,
            str(accelerate),
            str(out),
            overrides_of(config),
            resume,
            ports,
            self.ray_temp,
        )
        # the commands (`accelerate`, `tbrl`, `ray`) are this kernel's environment's, activated
        # or not; rank 0's lines stream into the notebook: its step lines, not bars' redraws
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env = {**os.environ, **self.steps.env, "PATH": path, "PYTHONUNBUFFERED": "1"}
        self.started: list[subprocess.Popen] = []
        self.seconds: dict[str, float] = {}

    def run(self) -> dict[str, Any]:
        say(f"{self.job.describe()}: {self.roles()}")
        try:
            self.start_ray()
            self.start_server()
            code = self.train()
        finally:
            self.stop()
        self.record(code)
        if code:
            tail = "".join(_tail(self.folder / "training.log", 20))
            raise TrainingJobFailed(
                f"training exited with {code} (its log: {self.folder / 'training.log'}):\n{tail}"
            )
        summary = json.loads((self.out / "summary.json").read_text())
        say(self.placed_line())
        return summary

    def roles(self) -> str:
        steps = self.steps
        parts = [f"training on {', '.join(steps.training.nodes)}"]
        if steps.ray:
            units = self.config.launch.units_per_node
            parts.append(f"Ray for sandboxes on {len(steps.ray)} node(s), {units} units each")
        if steps.server:
            parts.append(f"vLLM server on {steps.server.nodes[0]}")
        return "; ".join(parts)

    # --------------------------------------------------------------------------- roles
    def start(self, step: Step, log: Path, *, label: bool = False) -> subprocess.Popen:
        argv = step.srun()
        if label:
            argv.insert(1, "--label")
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                env=self.env,
                stdout=subprocess.PIPE if label else out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def start_ray(self) -> None:
        """The head, then the workers; each restarted up to `RAY_TRIES` times when its `ray
        start` exits before the cluster has its units."""
        if not self.steps.ray:
            return
        began = time.monotonic()
        head, *workers = self.steps.ray
        units = self.config.launch.units_per_node
        self._ray_nodes([head], units)
        self._ray_nodes(workers, units * len(self.steps.ray))
        self.seconds["ray_start"] = round(time.monotonic() - began, 1)
        say(
            f"Ray cluster up in {self.seconds['ray_start']:.0f}s: {len(self.steps.ray)} node(s), "
            f"{units * len(self.steps.ray)} sandbox units (RAY_ADDRESS={self.env['RAY_ADDRESS']})"
        )

    def _ray_nodes(self, steps: list[Step], total: int) -> None:
        if not steps:
            return
        logs = {s.role: self.folder / f"{s.role.replace(' ', '-')}.log" for s in steps}
        running = {s.role: self.start(s, logs[s.role]) for s in steps}
        tries = dict.fromkeys(running, 1)
        deadline = time.monotonic() + RAY_WAIT_S
        while cluster_units(self.env["RAY_ADDRESS"], self.resource) < total:
            for step in steps:
                if running[step.role].poll() is None:
                    continue
                if tries[step.role] >= RAY_TRIES:
                    raise TrainingJobFailed(
                        f"{step.role} on {step.nodes[0]} exited {tries[step.role]} times before "
                        f"joining; its log: {logs[step.role]}\n"
                        + "".join(_tail(logs[step.role], 10))
                    )
                tries[step.role] += 1
                running[step.role] = self.start(step, logs[step.role])
            if time.monotonic() > deadline:
                raise TrainingJobFailed(
                    f"the Ray cluster at {self.env['RAY_ADDRESS']} has fewer than {total} "
                    f"`{self.resource}` units after {RAY_WAIT_S}s; logs in {self.folder}"
                )
            time.sleep(POLL_S)

    @property
    def resource(self) -> str:
        return self.config.rollout.sandbox.ray.resource

    def start_server(self) -> None:
        step, url = self.steps.server, self.steps.server_health
        if step is None or url is None:
            return
        began = time.monotonic()
        process = self.start(step, self.folder / "vllm-server.log")
        while not answers(url, 5.0):
            if process.poll() is not None or time.monotonic() - began > SERVER_WAIT_S:
                raise TrainingJobFailed(
                    f"the vLLM server on {step.nodes[0]} did not answer at {url}/health; its "
                    f"log: {self.folder / 'vllm-server.log'}"
                )
            time.sleep(10)
        self.seconds["server_start"] = round(time.monotonic() - began, 1)
        say(f"vLLM server up in {self.seconds['server_start']:.0f}s at {url}")

    def train(self) -> int:
        """The training step; rank 0's lines printed as they come, every line logged."""
        began = time.monotonic()
        process = self.start(self.steps.training, self.folder / "training.log", label=True)
        assert process.stdout is not None
        with (self.folder / "training.log").open("a") as log:
            for task, line in labelled_lines(process.stdout):
                log.write(f"{task}: {line}\n")
                if task == 0 and not PROGRESS_BAR.match(line):
                    print(line, flush=True)
        code = process.wait()
        self.seconds["training"] = round(time.monotonic() - began, 1)
        return code

    def stop(self) -> None:
        """Every step started, newest first: SIGTERM to its `srun` (Slurm then ends the step's
        processes on its node), SIGKILL after `STOP_WAIT_S`."""
        for process in reversed(self.started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.started):
            try:
                process.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for index in range(len(self.steps.ray)):
            shutil.rmtree(f"{self.ray_temp}-{index}", ignore_errors=True)

    # --------------------------------------------------------------------------- record
    def places(self) -> Counter:
        """Rollouts per place their sandbox ran (the Ray node id), from the trajectories."""
        found: Counter = Counter()
        for path in (self.out / "trajectories").glob("*.jsonl"):
            for line in path.read_text().splitlines():
                found[json.loads(line)["details"].get("place") or "local"] += 1
        return found

    def placed_line(self) -> str:
        places = self.places()
        if not self.steps.ray:
            return f"{sum(places.values())} rollouts"
        shown = ", ".join(f"{node[:8]} {n}" for node, n in places.most_common())
        return f"rollouts per Ray node: {shown} ({len(places)} of {len(self.steps.ray)} nodes)"

    def record(self, code: int) -> None:
        job = self.job
        (self.folder / "job.json").write_text(
            json.dumps(
                {
                    "job_id": job.job_id,
                    "nodes": list(job.nodes[: node_count(self.config)]),
                    "training_nodes": list(self.steps.training.nodes),
                    "ray_nodes": [s.nodes[0] for s in self.steps.ray],
                    "server_node": self.steps.server.nodes[0] if self.steps.server else None,
                    "env": self.steps.env,
                    "ray_temp": self.ray_temp,
                    "exit_code": code,
                    "seconds": self.seconds,
                    "rollouts_per_place": dict(self.places()),
                },
                indent=1,
            )
        )


LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
PROGRESS_BAR = re.compile(r"^[^|]*: *\d+%\|.*\| *\d+/\d+ \[")
"""A tqdm bar's line (`rollouts:  50%|#####     | 1/2 [00:06<00:06, ...]`): in the log, not
the notebook, which shows the step lines."""


def labelled_lines(stream: IO[bytes]) -> Iterator[tuple[int | None, str]]:
    """(task, line) of `srun --label`'s output as it comes (None: a line of srun itself)."""
    for raw in iter(stream.readline, b""):
        text = raw.decode(errors="replace").rstrip("\r\n")
        match = LABEL.match(text)
        yield (int(match[1]), match[2]) if match else (None, text)


def cluster_units(address: str, resource: str) -> float:
    """The `resource` units the Ray cluster at `address` has in all (`ray status`), 0 while
    it does not answer."""
    ray = Path(sys.executable).with_name("ray")
    try:
        done = subprocess.run(
            [str(ray) if ray.exists() else "ray", "status", "--address", address],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        return 0.0
    match = re.search(rf"[\d.]+/([\d.]+) {re.escape(resource)}$", done.stdout, re.MULTILINE)
    return float(match[1]) if match else 0.0


def say(line: str) -> None:
    print(line, flush=True)


def _tail(path: Path, lines: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines(keepends=True)[-lines:]
    except OSError:
        return []
