"""Training through a Docker engine outage, on a real cpu-smoke-sized run.

The shared engine must never restart (other runs use it), so each test drives the run on a
private `dockerd` of its own (own socket, data root, exec root and bridge, started here and
always stopped), loaded with the images the run needs from the main engine, and selected
through DOCKER_HOST. Once step 1's checkpoint is complete the private engine is killed:

- left down past `rollout.sandbox.engine_wait_s`, the run stops (non-zero) with one line
  saying how to resume; that very command, run once the engine is back, finishes the run:
  steps 1..N logged once each, zero tbrl containers left on the engine;
- back within the wait, the run goes on by itself, reruns the rollouts the outage failed
  (none is left an infra error) and removes the containers it stranded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import psutil
import pytest

from tbrl_lib.aio import run_sync
from tbrl_lib.docker import engine
from tbrl_lib.docker.base_images import RUNTIME_SOURCE
from tbrl_lib.overrides import parse_overrides
from tbrl_lib.sandbox.backends.docker.backend import DockerBackend
from tbrl_lib.sandbox.backends.docker.images import ensure_image, image_tag
from tbrl_lib.sandbox.config import DockerSettings
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.task_set import select_tasks
from tbrl_lib.train.plan.resume import checkpoint_step, complete_checkpoints, write_state
from tbrl_lib.train.step.engine_outage import EngineWait, resume_command
from tbrl_lib.train.step.hooks import InfraErrorGuard
from tests.train.test_resume import SETTINGS, _command, _env, _wait_for_checkpoint
from tests.train.test_step_runner import infra_result, make_runner, make_task, scripted_result

STEPS = 3


def test_the_resume_command_continues_the_run_with_its_own_settings(tmp_path):
    settings = [*SETTINGS, "data.task_ids=[count-error-lines]", "model.name=hf:my model"]
    config = load_preset("cpu-smoke", parse_overrides(settings))
    args = shlex.split(resume_command(config, tmp_path / "my run"))
    assert args[:5] == ["tbrl", "train", "run", "--preset", "cpu-smoke"]
    assert args[-4:] == ["--out", str(tmp_path / "my run"), "--resume", "latest"]
    sets = [args[i + 1] for i, arg in enumerate(args) if arg == "--set"]
    assert load_preset("cpu-smoke", parse_overrides(sets)) == config
    assert len(sets) == len(settings)  # only what differs from the preset


def _infra_then_scored(calls: list[str]):
    """Every task's first rollout fails as an engine outage does, later ones are scored."""

    async def rollout_fn(task, policy, config, judge):
        calls.append(task.id)
        if calls.count(task.id) == 1:
            return infra_result(task, "sandbox: daemon_unreachable: refused")
        return scripted_result(task, 1.0)

    return rollout_fn


def test_an_engine_that_stays_down_stops_the_step_with_the_way_to_resume(tmp_path, monkeypatch):
    tasks = [make_task("a"), make_task("b")]
    calls: list[str] = []
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    outage = EngineWait(
        DockerBackend(DockerSettings()),
        0.3,
        "tbrl train run --out RUN --resume latest",
        tmp_path,
    )
    runner, _ = make_runner(
        tasks, _infra_then_scored(calls), infra=InfraErrorGuard(0.1), outage=outage
    )
    # The outage, not the infra-error rate, stops it; before any checkpoint: run again.
    with pytest.raises(engine.EngineOutage, match="within 0s; no checkpoint is saved"):
        runner.step(tasks)
    assert calls == ["a", "b"] and runner.calls == 0 and runner.settings.infra.total == 0
    (tmp_path / "checkpoints" / "checkpoint-1").mkdir(parents=True)
    write_state(tmp_path / "checkpoints" / "checkpoint-1", {"step": 1})
    calls.clear()
    with pytest.raises(engine.EngineOutage, match="resume with: tbrl train run --out RUN"):
        runner.step(tasks)


@pytest.mark.docker
def test_infra_errors_while_the_engine_answers_are_no_outage_and_not_rerun(tmp_path, docker_client):
    tasks = [make_task("a"), make_task("b")]
    calls: list[str] = []
    outage = EngineWait(DockerBackend(), 5, "tbrl train run --resume latest", tmp_path)
    runner, _ = make_runner(tasks, _infra_then_scored(calls), outage=outage)
    done = runner.step(tasks)
    assert calls == ["a", "b"]
    assert [r.infra_error for r in done.rollouts] == [True, True]  # masked, kept


class PrivateEngine:
    """A throw-away dockerd under `root` that a test may kill and start again. Its own bridge:
    never `--bridge none`, which makes dockerd delete the host's docker0."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sock = root / "d.sock"
        self.url = f"unix://{self.sock}"
        self.bridge = f"tbrl-o{os.getpid() % 100000}"
        self.subnet = f"10.252.{os.getpid() % 200 + 20}.1/24"
        self.proc: subprocess.Popen | None = None

    def start(self, limit_s: float = 60) -> None:
        if subprocess.run(["ip", "link", "show", self.bridge], capture_output=True).returncode:
            subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", self.subnet, "dev", self.bridge], check=True)
        with (self.root / "dockerd.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "dockerd",
                    *("--host", self.url),
                    *("--data-root", str(self.root / "data")),
                    *("--exec-root", str(self.root / "exec")),
                    *("--pidfile", str(self.root / "dockerd.pid")),
                    *("--bridge", self.bridge),
                    "--iptables=false",
                    "--ip-masq=false",
                    *("--shutdown-timeout", "1"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + limit_s
        while engine.ping(self.url) is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the private dockerd did not answer: {self.log_tail()}")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL, as a crashed or restarted engine goes: nothing is cleaned up."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """Stop the daemon and the containerd it started; remove its bridge and files."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        containerd = self.root / "exec" / "containerd" / "containerd.pid"
        if containerd.is_file():  # left running when the daemon was killed
            pid = int(containerd.read_text().strip() or 0)
            cmdline = Path(f"/proc/{pid}/cmdline")
            if pid and cmdline.exists() and str(self.root) in cmdline.read_text():
                os.kill(pid, signal.SIGTERM)
        # A killed engine's containers keep their shims, which outlive containerd by design.
        for shim in psutil.process_iter(["name", "cmdline"]):
            command = " ".join(shim.info["cmdline"] or ())
            if "containerd-shim" in (shim.info["name"] or "") and str(self.root) in command:
                with contextlib.suppress(psutil.NoSuchProcess):
                    shim.kill()
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        # dockerd bind-mounts its data root onto itself (once per start) and leaves it so.
        prefix = f"{self.root}/"
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for point in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
            subprocess.run(["umount", "-l", point], check=False)
        shutil.rmtree(self.root / "data", ignore_errors=True)

    def tbrl_containers(self) -> list[dict]:
        client = docker.DockerClient(base_url=self.url, timeout=30)
        try:
            return client.api.containers(all=True, filters={"label": "tbrl.owner"})
        finally:
            client.close()

    def log_tail(self) -> str:
        return (self.root / "dockerd.log").read_text(errors="replace")[-2000:]


@pytest.fixture(scope="module")
def private_engine(tmp_path_factory, docker_client, base_image):
    if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("ip") is None:
        pytest.skip("a private dockerd needs root, dockerd and iproute2 (ip) installed")
    if shutil.which("docker") is None:
        pytest.skip("moving images to the private dockerd needs the docker CLI")
    private = PrivateEngine(tmp_path_factory.mktemp("engine"))
    if len(str(private.sock)) > 100:
        pytest.skip(f"the socket path {private.sock} is too long for a unix socket")
    # The images a cpu-smoke run needs: its tasks' (built on the main engine if need be)
    # and the verifier runtime's source; the private engine builds its volumes from them.
    tasks = select_tasks(load_preset("cpu-smoke").data)
    images = [run_sync(ensure_image(task)) for task in tasks] + [RUNTIME_SOURCE]
    assert images[:-1] == [image_tag(t) for t in tasks]
    try:
        private.start()
        subprocess.run(
            f"docker save {' '.join(images)} | docker -H {private.url} load -q",
            shell=True,
            check=True,
            capture_output=True,
            timeout=300,
        )
        yield private
    finally:
        private.stop()


def _start_run(out: Path, log: Path, private: PrivateEngine, wait_s: float) -> subprocess.Popen:
    cmd = _command(["tbrl_lib.cli", "train", "run"], out)
    cmd += ["--set", f"rollout.sandbox.engine_wait_s={wait_s}"]
    with log.open("w") as fh:
        return subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, env={**_env(), "DOCKER_HOST": private.url}
        )


def _steps(out: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.docker
@pytest.mark.slow
def test_an_engine_down_past_the_wait_stops_the_run_and_its_resume_line_finishes_it(
    tmp_path, private_engine
):
    out, log = tmp_path / "run", tmp_path / "first.log"
    first = _start_run(out, log, private_engine, wait_s=5)
    try:
        _wait_for_checkpoint(first, out, log, limit_s=400)
        private_engine.kill()
        first.wait(timeout=300)
    finally:
        first.kill()
    text = log.read_text()
    assert first.returncode != 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert "the Docker engine does not answer" in text  # the wait was visible
    ends = [line for line in text.splitlines() if "--resume latest" in line]
    assert len(ends) == 1 and ends[0].startswith("error: "), text[-3000:]
    assert "did not come back within 5s" in ends[0]
    k = checkpoint_step(complete_checkpoints(out)[-1])
    assert k < STEPS, "the run finished before the outage hit it"
    assert _steps(out) == list(range(1, k + 1))  # the step the outage broke was not logged

    # The printed command, as printed, once the engine is back.
    private_engine.start()
    command = shlex.split(ends[0].split("resume with: ", 1)[1])
    assert command[:3] == ["tbrl", "train", "run"]
    resumed = subprocess.run(
        [sys.executable, "-m", "tbrl_lib.cli", *command[1:]],
        capture_output=True,
        text=True,
        env={**_env(), "DOCKER_HOST": private_engine.url},
        timeout=500,
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    assert _steps(out) == list(range(1, STEPS + 1))
    assert json.loads((out / "summary.json").read_text())["steps"] == STEPS
    assert private_engine.tbrl_containers() == []


@pytest.mark.docker
@pytest.mark.slow
def test_an_engine_back_within_the_wait_lets_the_run_go_on(tmp_path, private_engine):
    out, log = tmp_path / "run", tmp_path / "run.log"
    run = _start_run(out, log, private_engine, wait_s=120)
    try:
        _wait_for_checkpoint(run, out, log, limit_s=400)
        private_engine.kill()
        time.sleep(3)
        private_engine.start()
        run.wait(timeout=500)
    finally:
        run.kill()
    text = log.read_text()
    assert run.returncode == 0, text[-3000:]
    assert "the Docker engine does not answer" in text, "the outage missed the run"
    assert "the Docker engine answers again" in text and "rerunning the" in text
    assert _steps(out) == list(range(1, STEPS + 1))
    # The rollouts the outage failed were run again, not kept as (masked) infra errors.
    rows = [
        json.loads(line)
        for path in sorted((out / "trajectories").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert rows and not [r["error"] for r in rows if r["infra_error"]]
    assert private_engine.tbrl_containers() == []
