"""Sandbox test fixtures: tasks on the offline base image, and a second Docker daemon.

`second_daemon` starts a throw-away `dockerd` on a private socket and data root (no
bridge, no iptables), loads a ~5 MB image made of the host's bash/coreutils binaries
into it for the tasks, and the verifier runtime's source image (`docker save | load`): every
engine builds its verifier runtime volume from it. It stops the daemon at the end.
It needs root and `dockerd`; otherwise the tests that use it are skipped with the reason.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tbrl_lib.docker.base_images import BASE_IMAGE, RUNTIME_SOURCE
from tbrl_lib.tasks.model import Environment, Limits, Task, Tests

D2_SOCK = "/tmp/tbrl-d2.sock"
D2_URL = f"unix://{D2_SOCK}"
D2_PID = Path("/tmp/tbrl-d2.pid")
MINI_IMAGE = "tbrl-test/mini:1"
D2_BRIDGE = "tbrl-d2br"
"""Its own bridge. Never `--bridge none`: dockerd then DELETES the host's docker0 (the main
daemon's bridge), breaking networking for every other container and build."""


def make_task(
    task_id: str = "sandbox-test",
    dockerfile: str | None = f"FROM {BASE_IMAGE}\n",
    image: str | None = None,
    **limits,
) -> Task:
    return Task(
        id=task_id,
        instruction="test task",
        environment=Environment(dockerfile=dockerfile, image=image),
        tests=Tests(pytest="def test_ok():\n    assert True\n"),
        limits=Limits(**limits),
    )


def run(coro, timeout: float = 120):
    """Run a coroutine with a hard timeout (no test may hang)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


@pytest.fixture
def task(base_image) -> Task:
    return make_task()


def tbrl_containers(client, **labels) -> list[dict]:
    filters = ["tbrl.owner"] + [f"{k}={v}" for k, v in labels.items()]
    return client.api.containers(all=True, filters={"label": filters})


# --------------------------------------------------------------------- second daemon
def _mini_rootfs() -> bytes:
    """bash, sh, sleep, cat, ls, kill and their shared libraries, as an importable tar."""
    wanted = ["bash", "sh", "sleep", "cat", "ls", "mkdir", "echo", "true"]
    files: set[str] = set()
    for name in wanted:
        path = shutil.which(name)
        if path:
            files.add(path)
            out = subprocess.run(
                ["ldd", os.path.realpath(path)], capture_output=True, text=True, check=False
            ).stdout
            for line in out.splitlines():
                for part in line.split():
                    if part.startswith("/"):
                        files.add(part)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "usr/bin", "lib", "lib64", "usr/lib", "tmp", "app", "proc", "dev", "etc"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        for path in sorted(files):
            data = Path(os.path.realpath(path)).read_bytes()
            for name in {path.lstrip("/"), os.path.realpath(path).lstrip("/")}:
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module")
def second_daemon(docker_client):
    """A second dockerd on this machine, started and stopped here; yields its base_url."""
    import docker

    if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("ip") is None:
        pytest.skip("a second dockerd needs root, dockerd and iproute2 (ip) installed")
    started = None
    if not _answers(D2_URL):
        for d in ("/tmp/tbrl-d2", "/tmp/tbrl-d2x"):
            os.makedirs(d, exist_ok=True)
        if subprocess.run(
            ["ip", "link", "show", D2_BRIDGE], capture_output=True, check=False
        ).returncode:
            subprocess.run(["ip", "link", "add", D2_BRIDGE, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", "10.251.0.1/24", "dev", D2_BRIDGE], check=True)
        with open("/tmp/tbrl-d2.log", "ab") as log:
            started = subprocess.Popen(
                [
                    "dockerd",
                    "--host",
                    D2_URL,
                    "--data-root",
                    "/tmp/tbrl-d2",
                    "--exec-root",
                    "/tmp/tbrl-d2x",
                    "--pidfile",
                    str(D2_PID),
                    "--bridge",
                    D2_BRIDGE,
                    "--iptables=false",
                    "--ip-masq=false",
                    "--shutdown-timeout",
                    "1",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while not _answers(D2_URL):
            if time.monotonic() > deadline or started.poll() is not None:
                started.kill()
                pytest.skip("second dockerd did not come up; see /tmp/tbrl-d2.log")
            time.sleep(0.3)
    client = docker.DockerClient(base_url=D2_URL, timeout=60)
    rootfs = _mini_rootfs()
    repo, tag = MINI_IMAGE.split(":")
    for c in (client, docker_client):  # the same tiny image on both daemons
        c.api.import_image_from_data(rootfs, repository=repo, tag=tag)
    client.close()

    subprocess.run(
        f"docker save {RUNTIME_SOURCE} | docker -H {D2_URL} load -q",
        shell=True,
        check=True,
        capture_output=True,
        timeout=300,
    )
    yield D2_URL
    docker_client.api.remove_image(MINI_IMAGE, force=True)
    if started is not None:
        stop_second_daemon(started.pid)
        subprocess.run(["ip", "link", "del", D2_BRIDGE], capture_output=True, check=False)
        shutil.rmtree("/tmp/tbrl-d2", ignore_errors=True)
        shutil.rmtree("/tmp/tbrl-d2x", ignore_errors=True)


def _answers(url: str) -> bool:
    from tbrl_lib.docker import engine

    return os.path.exists(url.removeprefix("unix://")) and engine.ping(url) is not None


def stop_second_daemon(pid: int | None = None) -> None:
    if pid is None and D2_PID.exists():
        pid = int(D2_PID.read_text().strip() or 0) or None
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running (not a zombie); reaps it when it is our child."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
