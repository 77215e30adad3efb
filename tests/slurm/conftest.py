"""A real Slurm on this machine (Debian's slurmctld, slurmd, slurm-client and munge): a munged
with a key of the test's own, a slurmctld and `NODES` `slurmd -N nX`, every node at
`NodeAddr=127.0.0.1` with `GPUS` fake GPUs (gres `File=` character devices made with `mknod
... c 1 3`, so `--gpus-per-node` is checked at submit), ports of their own (free ones), a
state, spool and log directory under the test's temp dir, `EnforcePartLimits=ALL` (an
impossible request fails at submit instead of pending), `proctrack/linuxproc` (a step's
processes end with it). Every daemon is started in a session of its own and stopped by its
pid; the jobs cancelled first are the cluster's own (`SLURM_CONF` names it).

Skipped with the reason where the packages are missing or `mknod` is not allowed.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

NODES = 4
GPUS = 8
CPUS = 2
START_S = 60.0
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "salloc", "scontrol", "squeue")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    daemons: list[subprocess.Popen] = field(default_factory=list)
    started_s: float = 0.0

    @property
    def env(self) -> dict[str, str]:
        """What a client of this cluster (and the jobs it submits) runs with."""
        return {**os.environ, "SLURM_CONF": str(self.conf), "RAY_AUTH_MODE": "disabled"}

    def run(self, *argv: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("env", self.env)
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)

    def job_state(self, job_id: str) -> str:
        out = self.run("scontrol", "show", "job", job_id).stdout
        return next((w.split("=", 1)[1] for w in out.split() if w.startswith("JobState=")), "")

    def wait_for(self, job_id: str, timeout: float) -> str:
        """The job's final state (COMPLETED, FAILED, ...), waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        while (state := self.job_state(job_id)) in ("PENDING", "RUNNING", "CONFIGURING", ""):
            if time.monotonic() > deadline:
                self.run("scancel", job_id)
                pytest.fail(f"job {job_id} still {state or 'unknown'} after {timeout:.0f}s")
            time.sleep(2)
        return state

    def idle_nodes(self) -> int:
        out = self.run("sinfo", "-h", "-o", "%T %D").stdout.split()
        return int(out[1]) if len(out) == 2 and out[0] == "idle" else 0

    def stop(self) -> None:
        """Cancel the cluster's own jobs, then stop each daemon by its pid."""
        jobs = self.run("squeue", "-h", "-o", "%i").stdout.split()
        if jobs:
            self.run("scancel", *jobs)
            deadline = time.monotonic() + 30
            while self.run("squeue", "-h", "-o", "%i").stdout.split():
                if time.monotonic() > deadline:
                    break
                time.sleep(1)
        for process in reversed(self.daemons):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.daemons):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _config(root: Path, user: str) -> str:
    nodes = "\n".join(
        f"NodeName=n{i} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
        f"Port={_free_port()} CPUs={CPUS} RealMemory=1000 Gres=gpu:{GPUS} State=UNKNOWN"
        for i in range(NODES)
    )
    return f"""ClusterName=tbrltest
SlurmctldHost={socket.gethostname()}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
EnforcePartLimits=ALL
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
InactiveLimit=0
KillWait=10
{nodes}
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _daemon(argv: list[str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


def start_cluster(root: Path) -> SlurmCluster:
    """munged, slurmctld and `NODES` slurmd in `root`; returns once every node is idle."""
    began = time.monotonic()
    munge = root / "munge"
    munge.mkdir(mode=0o755)  # munged refuses a socket directory others may write to
    for sub in ("state", "log", "dev", *(f"spool/n{i}" for i in range(NODES))):
        (root / sub).mkdir(parents=True)
    (munge / "munge.key").write_bytes(os.urandom(1024))
    (munge / "munge.key").chmod(0o400)
    for i in range(GPUS):
        try:
            os.mknod(root / "dev" / f"gpu{i}", 0o666 | 0o020000, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("fake GPU devices need mknod (root or CAP_MKNOD)")
    conf = root / "slurm.conf"
    conf.write_text(_config(root, getpass.getuser()))
    (root / "gres.conf").write_text(
        f"NodeName=n[0-{NODES - 1}] Name=gpu File={root}/dev/gpu[0-{GPUS - 1}]\n"
    )
    cluster = SlurmCluster(root, conf)
    m = str(munge)
    cluster.daemons.append(
        _daemon(
            ["munged", "-F", "--force", f"--socket={m}/munge.socket",
             f"--key-file={m}/munge.key", f"--pid-file={m}/munged.pid",
             f"--log-file={m}/munged.log", f"--seed-file={m}/munged.seed"],
            root / "log" / "munged.out",
        )
    )  # fmt: skip
    while not (munge / "munge.socket").exists():
        if time.monotonic() - began > START_S:
            pytest.fail(f"munged did not start: {(root / 'log' / 'munged.out').read_text()}")
        time.sleep(0.1)
    cluster.daemons.append(
        _daemon(["slurmctld", "-D", "-f", str(conf)], root / "log" / "slurmctld.out")
    )
    for i in range(NODES):
        argv = ["slurmd", "-D", "-N", f"n{i}", "-f", str(conf)]
        cluster.daemons.append(_daemon(argv, root / "log" / f"slurmd-n{i}.out"))
    while cluster.idle_nodes() < NODES:
        if time.monotonic() - began > START_S:
            cluster.stop()
            logs = "".join(p.read_text()[-800:] for p in (root / "log").glob("*"))
            pytest.fail(f"the test Slurm's nodes are not idle after {START_S:.0f}s:\n{logs}")
        time.sleep(0.3)
    cluster.started_s = time.monotonic() - began
    return cluster


@pytest.fixture(scope="session")
def slurm():
    """The test's own Slurm: `NODES` nodes x `GPUS` fake GPUs, stopped at the end."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (apt-get install slurmctld slurmd "
            "slurm-client munge)"
        )
    root = Path(tempfile.mkdtemp(prefix="tbrl-slurm-", dir="/tmp"))  # short: a unix socket
    cluster = start_cluster(root)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
