"""`tbrl train run` with `vllm-server` on one machine: the server started as the launch files start it.

On a cluster `commands.sh` starts `vllm serve` and waits for its /health before training.
On a CPU machine `serving(config, model, log)` does the same from the
run itself: when `launch.vllm_server_url` is a loopback URL and nothing answers there, it
starts `launch.server_command` (the launch files' command, for the run's model folder) with
its output in the run folder, waits for /health as the scripts do, and stops the server's
process group when the run ends. A server that already answers is used as it is; a URL on
another host is left to the launch files (TRL's client says when nothing answers).

A run killed outright (SIGKILL, the OOM killer) runs no `finally`: on Linux the server is
started with a parent-death signal, so the kernel sends it SIGTERM when the run's process
dies, and vLLM's API server stops its engine as on any SIGTERM.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.plan.launch import SERVER_WAIT_S, run_starts_server, server_command

STOP_WAIT_S = 30
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def answers(url: str, timeout: float = 5.0) -> bool:
    """Whether a vLLM server's /health answers 200 at `url`."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout) as reply:
            return reply.status == 200
    except (OSError, ValueError):  # URLError is an OSError; ValueError: not a URL
        return False


@contextmanager
def serving(
    config: TrainConfig, model: str, log_path: Path, wait_s: float = SERVER_WAIT_S
) -> Iterator[subprocess.Popen | None]:
    """The run's vLLM server while the block runs (see the module docstring); yields its
    process, or None when the run uses one it did not start."""
    url = os.path.expandvars(config.launch.vllm_server_url or "")
    if not run_starts_server(config) or answers(url):
        yield None
        return
    argv = shlex.split(server_command(config, model=model, python=sys.executable))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        server = start_tied(argv, log)
    try:
        wait_for(server, url, log_path, wait_s)
        yield server
    finally:
        stop(server)


def start_tied(argv: list[str], log) -> subprocess.Popen:
    """`argv` in a process group of its own (so `stop` reaches its workers), signalled SIGTERM
    by the kernel when this process dies (Linux; elsewhere only `stop` ends it). The signal
    follows the thread that starts it: `serving` runs in the run's main thread."""
    tie = _die_with_parent if sys.platform == "linux" else None
    return subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=tie
    )


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def wait_for(server: subprocess.Popen, url: str, log_path: Path, wait_s: float) -> None:
    """Until /health answers; a server that exits or outlasts `wait_s` is an error that shows
    the end of its log."""
    deadline = time.monotonic() + wait_s
    while not answers(url):
        if server.poll() is not None:
            raise RuntimeError(
                f"the vLLM server exited with code {server.returncode} before answering at "
                f"{url}; the end of {log_path}:\n{tail(log_path)}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"no vLLM server at {url} after {wait_s:.0f}s; the end of {log_path}:\n"
                f"{tail(log_path)}"
            )
        time.sleep(1)


def stop(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (the API server, its engine and workers), then
    SIGKILL to whatever of the group is left after `STOP_WAIT_S`."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        server.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait()


def tail(path: Path, lines: int = 20) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])
