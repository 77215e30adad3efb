"""A real Ray cluster on this machine: a head with no `sandbox` resource and two workers, each
a separate `ray start --block` process group with its own ports, in a temp dir of the test's,
each worker on its own Docker engine (`DOCKER_HOST`): worker A on this machine's engine,
worker B on a private dockerd of the test's own (`PrivateEngine` of the engine-outage
tests, own socket, data root and bridge; it gets the offline base image and the verifier
runtime's source image), never an engine another test run may stop or wipe meanwhile. Stopped by process group, never `ray stop` (which
ends every Ray process on the machine, other people's included).

Needs the `ray` extra and root (the second dockerd); skipped with the reason otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import docker
import pytest

from tbrl_lib.docker.base_images import BASE_IMAGE, RUNTIME_SOURCE
from tests.train.test_engine_outage import PrivateEngine

ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
START_S = 120.0
TRIES = 3
UNITS = 2
"""`sandbox` units per worker: 4 in the cluster (the issue's Done-when)."""
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",  # a test cluster on loopback; no token file to share
    "RAY_agent_register_timeout_ms": "180000",  # a loaded 2-core machine starts agents slowly
    "RAY_raylet_start_wait_time_s": "180",
}
"""Every process of the test cluster, its drivers included, runs with these."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ports() -> dict[str, int]:
    """A node's own ports, so it collides with no other Ray on this machine."""
    names = (
        "node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port", "runtime-env-agent-port", "metrics-export-port",
    )  # fmt: skip
    ports = {name: _free_port() for name in names}
    ports["min-worker-port"] = _worker_block()
    ports["max-worker-port"] = ports["min-worker-port"] + WORKER_PORTS - 1
    return ports


WORKER_PORTS = 200
_handed_out: set[int] = set()


def _worker_block() -> int:
    """The first port of `WORKER_PORTS` free ones below the kernel's ephemeral range (where
    `_free_port`'s ports and every other random port come from), none handed out before.
    It was derived from the node-manager port, which put it on that very port whenever the
    kernel picked one in 32768-39999 (Ray refused to start: "used by other components")."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    blocks = range(10_000, low - WORKER_PORTS, WORKER_PORTS)
    start = (os.getpid() * 7) % len(blocks)  # two test sessions: different blocks
    for index in [*range(start, len(blocks)), *range(start)]:
        first = blocks[index]
        if first not in _handed_out and all(
            _bindable(p) for p in range(first, first + WORKER_PORTS)
        ):
            _handed_out.add(first)
            return first
    raise RuntimeError(f"no {WORKER_PORTS} free ports below {low} for Ray's workers")


def _bindable(port: int) -> bool:
    """Free on every interface (Ray's workers listen on the node's address)."""
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


class PortRendezvous(threading.Thread):
    """Writes a starting node's agent port files for its raylet.

    Ray 2.60's raylet waits about 15 s for its agents to write their port files
    (`dashboard_agent_listen_port_<node id>`, ...) and aborts past that; on a loaded 2-core
    machine the dashboard agent alone takes longer to import. The test passes every port
    explicitly, so it can write those files itself as soon as the raylet runs (its command
    line names the node id and session dir); the agents write the same ports later. Only
    for the test's own nodes (the processes of the node's process group)."""

    def __init__(self, pgid: int, ports: dict[str, int]) -> None:
        super().__init__(daemon=True)
        self.pgid, self.ports = pgid, ports
        self.stop = threading.Event()

    def run(self) -> None:
        done: set[str] = set()
        while not self.stop.is_set():
            for args in _raylets(self.pgid):
                node_id, session = args.get("--node_id"), args.get("--session_dir")
                if node_id and session and node_id not in done:
                    self._write(Path(session), node_id, args)
                    done.add(node_id)
            time.sleep(0.1)

    def _write(self, session: Path, node_id: str, args: dict[str, str]) -> None:
        from ray._raylet import get_port_filename  # noqa: PLC0415 - the ray extra

        values = {
            "dashboard_agent_listen_port": self.ports["dashboard-agent-listen-port"],
            "metrics_agent_port": args.get("--metrics-agent-port"),
            "metrics_export_port": args.get("--metrics_export_port"),
            "runtime_env_agent_port": args.get("--runtime_env_agent_port"),
        }
        for name, port in values.items():
            path = session / get_port_filename(node_id, name)
            if port and str(port) != "0" and not path.exists():
                tmp = path.with_suffix(".tbrl-tmp")
                tmp.write_text(str(port))
                tmp.rename(path)


def _raylets(pgid: int) -> list[dict[str, str]]:
    """The `--key=value` arguments of each raylet process in process group `pgid`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ProcessLookupError):
            continue
        if argv and argv[0].endswith(b"/raylet"):
            pairs = (a.decode(errors="replace").partition("=") for a in argv[1:])
            found.append({k: v for k, _, v in pairs if k.startswith("--")})
    return found


@dataclass
class Node:
    name: str
    process: subprocess.Popen
    docker_host: str | None
    log: Path
    rendezvous: PortRendezvous
    ports: dict[str, int]

    def kill(self) -> None:
        """SIGKILL the node's whole process group: its raylet and its workers (the host
        actor among them) die as with a lost machine; its engine and containers stay."""
        self.rendezvous.stop.set()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)


@dataclass
class Cluster:
    address: str
    tmp: Path
    head: Node | None
    workers: dict[str, Node] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        """A driver's environment: RAY_ADDRESS and the tree on PYTHONPATH."""
        env = {**os.environ, **RAY_ENV, "RAY_ADDRESS": self.address, "PYTHONPATH": str(ROOT)}
        env.update(extra)
        env.pop("DOCKER_HOST", None)
        return env

    def start_worker(self, name: str, docker_host: str | None) -> Node:
        """Start a worker and wait until it is a live sandbox node (see `_join`)."""
        env = {**os.environ, **RAY_ENV, "PYTHONPATH": str(ROOT)}
        env.pop("DOCKER_HOST", None)
        env.pop("RAY_ADDRESS", None)
        if docker_host:
            env["DOCKER_HOST"] = docker_host
        resources = json.dumps({"sandbox": UNITS})
        args = ["--address", self.address, "--num-cpus", "2", "--resources", resources]
        node = self._join(name, args, env, lambda port: port in (self.sandbox_ports() or []))
        self.workers[name] = node
        return node

    def _join(self, name: str, args: list[str], env: dict[str, str], joined) -> Node:
        """`ray start` until `joined(its node-manager port)`: one node at a time, and again
        (up to `TRIES`) when its raylet gives up (see `PortRendezvous`)."""
        for _ in range(TRIES):
            node = _start(name, self.tmp, args, env)
            try:
                deadline = time.monotonic() + START_S
                while node.process.poll() is None and time.monotonic() < deadline:
                    if joined(node.ports["node-manager-port"]):
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.setpriority(os.PRIO_PGRP, node.process.pid, 0)
                        return node
                    if "exited unexpectedly" in node.log.read_text(errors="replace"):
                        break  # `ray start --block` says so when its raylet died
                    time.sleep(5.0)
            except BaseException:
                node.kill()  # interrupted: no node of the test outlives it
                raise
            node.kill()
        pytest.fail(f"{name} did not start in {TRIES} tries:\n{node.log.read_text()[-3000:]}")

    def sandbox_ports(self) -> list[int] | None:
        """The node-manager ports of the live nodes with `sandbox` units, asked by a driver
        of its own (None: the head does not answer yet)."""
        try:
            out = subprocess.run(
                [sys.executable, "-c", _LIVE_PORTS],
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            return None
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else None

    def stop(self) -> None:
        for node in [*self.workers.values(), self.head]:
            if node is not None:
                node.kill()


_LIVE_PORTS = (
    "import json, ray; ray.init(log_to_driver=False); print(json.dumps([n['NodeManagerPort'] "
    "for n in ray.nodes() if n['Alive'] and n['Resources'].get('sandbox')]))"
)


STARTUP_NICE = -10
"""A starting node's priority: its raylet gives up when the node's agents take over ~15 s
to start, which they do on a loaded 2-core machine; back to 0 once the node has joined."""


def _startup_priority() -> None:
    if os.geteuid() == 0:
        os.nice(STARTUP_NICE)


def _start(name: str, tmp: Path, args: list[str], env: dict[str, str]) -> Node:
    log = tmp / f"{name}.log"
    ports = _ports()
    flags = [f"--{key}={value}" for key, value in ports.items()]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(RAY), "start", "--block", "--disable-usage-stats", *flags, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_startup_priority,
        )
    rendezvous = PortRendezvous(process.pid, ports)
    rendezvous.start()
    return Node(name, process, env.get("DOCKER_HOST"), log, rendezvous, ports)


def _load_images(url: str) -> None:
    """The offline base image (tasks build FROM it) and the verifier runtime's source (the
    engine makes its runtime volume from it) on the private engine."""
    for image in (BASE_IMAGE, RUNTIME_SOURCE):
        subprocess.run(
            f"docker save {image} | docker -H {url} load -q",
            shell=True,
            check=True,
            capture_output=True,
            timeout=600,
        )


@pytest.fixture(scope="module")
def engine_b(tmp_path_factory, docker_client, base_image):
    """Worker b's Docker engine: a private dockerd, stopped and removed at the end."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("ip") is None:
        pytest.skip("a private dockerd needs root, dockerd and iproute2 (ip) installed")
    private = PrivateEngine(tmp_path_factory.mktemp("engine-b"))
    if len(str(private.sock)) > 100:
        pytest.skip(f"the socket path {private.sock} is too long for a unix socket")
    private.start()
    try:
        _load_images(private.url)
        yield private
    finally:
        private.stop()


@pytest.fixture(scope="module")
def cluster(engine_b, base_image):
    """The head and workers `a` (this machine's engine) and `b` (a private dockerd)."""
    if not RAY.exists():
        pytest.skip("the ray extra is not installed (pip install 'tbrl[ray]')")
    tmp = Path(tempfile.mkdtemp(prefix="tbrl-ray-", dir="/tmp"))
    port = _free_port()
    env = {**os.environ, **RAY_ENV}
    env.pop("DOCKER_HOST", None)
    env.pop("RAY_ADDRESS", None)
    head_args = [
        "--head", "--port", str(port), "--temp-dir", str(tmp / "ray"), "--num-cpus", "1",
        "--include-dashboard", "false", "--ray-client-server-port", str(_free_port()),
    ]  # fmt: skip
    made = Cluster(f"127.0.0.1:{port}", tmp, None)
    try:
        made.head = made._join("head", head_args, env, lambda _: made.sandbox_ports() is not None)
        made.start_worker("a", None)
        made.start_worker("b", engine_b.url)
        yield made
    finally:
        made.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run_containers(client: docker.DockerClient, run_id: str) -> list[dict]:
    """The tbrl containers of `run_id` on one engine (running or not)."""
    return client.api.containers(all=True, filters={"label": [f"tbrl.run={run_id}"]})


@pytest.fixture(scope="module")
def engines(engine_b, docker_client):
    """Clients of worker a's and worker b's engines."""
    other = docker.DockerClient(base_url=engine_b.url, timeout=60)
    yield {"a": docker_client, "b": other}
    other.close()
