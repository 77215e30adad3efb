"""Leak-proof cleanup: label everything tbrl starts, remove it however the process ends.

Four layers, from the common case to the worst:
1. a rollout's `__aexit__` removes its container (see `container.py`);
2. `atexit` removes every container this process still has registered;
3. SIGTERM (and SIGINT when Python's default handler is installed) runs the same
   cleanup, then lets the signal take its normal course;
4. SIGKILL cannot be caught, so every container carries `tbrl.owner` =
   `<hostname>:<pid>:<process start ticks>`; `reap()` (run automatically once per process
   per docker host at the first sandbox, and by `tbrl docker reap`) removes tbrl-labelled
   containers, networks and volumes whose owner is on this machine and no longer alive
   (same pid *and* same start time, so a reused pid does not protect a leak).

An engine that stops answering (a restart) leaves behind the containers whose removal failed
meanwhile (`close()` gives them up: nothing answers). A run that waits the outage out calls
`reap_stranded()` once the engine is back: it removes this process's containers that it no
longer tracks. A run that stops instead leaves them to the next run's automatic `reap()`
(their owner is then dead).

Never host-wide prunes: only objects with a `tbrl.owner` label are considered, and owners
on other machines are left alone unless `foreign=True`.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass, field

import docker
from docker.errors import NotFound

LABEL_OWNER = "tbrl.owner"
LABEL_RUN = "tbrl.run"
LABEL_TASK = "tbrl.task"
log = logging.getLogger(__name__)


def _start_ticks(pid: int) -> str | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


HOSTNAME = socket.gethostname()


def owner_label() -> str:
    """This process's identity: host, pid and start time (computed per call: forks differ)."""
    pid = os.getpid()
    return f"{HOSTNAME}:{pid}:{_start_ticks(pid)}"


def owner_alive(owner: str) -> bool | None:
    """True/False for owners on this machine; None when the owner is another machine's."""
    try:
        host, pid, ticks = owner.rsplit(":", 2)
    except ValueError:
        return False  # malformed tbrl label: nobody can own it
    if host != HOSTNAME:
        return None
    return pid.isdigit() and _start_ticks(int(pid)) == ticks


# --------------------------------------------------------------------------- registry
_LIVE: dict[str, docker.DockerClient] = {}
_LIVE_LOCK = threading.Lock()
_ATEXIT = False
_SIGNALS = False


def register(container_id: str, client: docker.DockerClient) -> None:
    with _LIVE_LOCK:
        _LIVE[container_id] = client


def unregister(container_id: str) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(container_id, None)


def live_count() -> int:
    with _LIVE_LOCK:
        return len(_LIVE)


def cleanup_registered() -> int:
    """Remove every container this process still has registered (sync; exit paths)."""
    with _LIVE_LOCK:
        items = list(_LIVE.items())
        _LIVE.clear()
    removed = 0
    for cid, client in items:
        try:
            client.api.remove_container(cid, force=True)
            removed += 1
        except NotFound:
            pass
        except Exception as err:  # noqa: BLE001 - exit path: report, go on with the rest
            log.warning("tbrl: could not remove container %s at exit: %s", cid[:12], err)
    return removed


def install_handlers() -> None:
    """atexit + SIGTERM/SIGINT cleanup, installed once, chaining any previous handler."""
    global _ATEXIT, _SIGNALS
    if not _ATEXIT:
        _ATEXIT = True
        atexit.register(cleanup_registered)
    if _SIGNALS or threading.current_thread() is not threading.main_thread():
        return  # signals can only be hooked from the main thread
    _SIGNALS = True
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        if previous is signal.SIG_IGN:
            continue
        signal.signal(signum, _make_handler(signum, previous))


def _make_handler(signum: int, previous):
    def handler(sig, frame):
        cleanup_registered()
        if callable(previous):
            return previous(sig, frame)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler


# --------------------------------------------------------------------------- reaping
@dataclass
class ReapReport:
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    kept_alive_owner: int = 0
    kept_foreign: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def removed(self) -> int:
        return len(self.containers) + len(self.networks) + len(self.volumes)


def _should_remove(labels: dict[str, str], foreign: bool, report: ReapReport) -> bool:
    alive = owner_alive(labels.get(LABEL_OWNER, ""))
    if alive is None:
        report.kept_foreign += 1
        return foreign
    if alive:
        report.kept_alive_owner += 1
        return False
    return True


def reap(
    client: docker.DockerClient, foreign: bool = False, run_id: str | None = None
) -> ReapReport:
    """Remove tbrl-labelled containers/networks/volumes whose owner process is gone; with
    `run_id`, only that run's containers (a run that ended reaps its own, nobody else's)."""
    report = ReapReport()
    flt = {"label": LABEL_OWNER}
    only_run = {"label": [LABEL_OWNER, f"{LABEL_RUN}={run_id}"]} if run_id else flt
    for c in client.api.containers(all=True, filters=only_run):
        if _should_remove(c.get("Labels") or {}, foreign, report):
            try:
                client.api.remove_container(c["Id"], force=True)
                report.containers.append(c["Id"][:12])
            except NotFound:
                pass
            except Exception as err:  # noqa: BLE001 - report it, keep reaping the rest
                report.errors.append(f"container {c['Id'][:12]}: {err}")
    if run_id:
        return report  # networks and volumes carry no run label
    for n in client.api.networks(filters=flt):
        if _should_remove(n.get("Labels") or {}, foreign, report):
            try:
                client.api.remove_network(n["Id"])
                report.networks.append(n["Name"])
            except Exception as err:  # noqa: BLE001 - report it, keep reaping the rest
                report.errors.append(f"network {n['Name']}: {err}")
    for v in (client.api.volumes(filters=flt) or {}).get("Volumes") or []:
        if _should_remove(v.get("Labels") or {}, foreign, report):
            try:
                client.api.remove_volume(v["Name"], force=True)
                report.volumes.append(v["Name"])
            except Exception as err:  # noqa: BLE001 - report it, keep reaping the rest
                report.errors.append(f"volume {v['Name']}: {err}")
    return report


def reap_stranded(client: docker.DockerClient) -> list[str]:
    """Remove this process's containers that it no longer tracks (their removal failed while
    the engine did not answer); returns their short ids. Call it with no sandbox of this
    process being opened, since one is tracked only once it is created."""
    with _LIVE_LOCK:
        tracked = set(_LIVE)
    mine = client.api.containers(all=True, filters={"label": f"{LABEL_OWNER}={owner_label()}"})
    removed = []
    for c in mine:
        if c["Id"] in tracked:
            continue
        try:
            client.api.remove_container(c["Id"], force=True)
            removed.append(c["Id"][:12])
        except NotFound:
            pass
    return removed


_REAPED_HOSTS: set[str] = set()


def reap_once(client: docker.DockerClient, host_name: str) -> ReapReport | None:
    """Reap a host the first time this process uses it (the automatic 'next start' reap)."""
    if host_name in _REAPED_HOSTS:
        return None
    _REAPED_HOSTS.add(host_name)
    report = reap(client)
    if report.removed:
        log.warning(
            "tbrl: reaped %d leftover objects of dead tbrl processes on %s",
            report.removed,
            host_name,
        )
    return report
