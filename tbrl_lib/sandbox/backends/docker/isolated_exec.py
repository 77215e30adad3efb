"""`exec_with_deadline`: one process started by the engine, read in a thread, bounded in time.

The verifier (and anything else that must not go through the agent's shell) starts a fresh
`docker exec` with an explicit environment and user. The docker SDK's exec stream has no
deadline, and a runner the agent SIGSTOPs would hold a reader forever, so the stream is
read by a daemon thread on its own API client (its own socket, so a stuck read holds no
connection of the shared pool) and the caller waits at most `timeout` seconds.

On the deadline every process of the container but its init is killed (`kill -9 -1` from a
fresh exec of the runtime's bash): the verifier runs last, and a runner the agent keeps
SIGSTOPped, together with the agent's processes that stop it, must not outlive the rollout. The
killer itself may be stopped by such a loop before it acts, so each try is bounded and it is
tried again; if none gets through the call still returns, timed out (the agent's doing,
scored). The command is started through the runtime's bash, which prints its container pid on
stderr and `exec`s the command; that first stderr line is consumed and never returned.
"""

from __future__ import annotations

import threading
from typing import Any

import docker

from tbrl_lib.sandbox.backends.docker.runtime_volume import BASH
from tbrl_lib.sandbox.base import ExecResult, IsolatedCommand

MAX_STDOUT = 32 * 1024 * 1024
"""Stdout kept (the tail); a runner that floods is cut, not allowed to fill memory."""
MAX_STDERR = 256 * 1024
KILL_TRIES = 5
KILL_TRY_S = 3.0
"""How often, and for how long each time, the deadline's killer is tried."""


def engine_url(api: Any) -> str:
    """The URL to open a second client on the same engine (the SDK rewrites unix URLs)."""
    adapter = getattr(api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    if api.base_url.startswith("http+docker://") and socket_path:
        return "unix://" + socket_path
    return api.base_url


def exec_with_deadline(
    shared_api: Any,
    container_id: str,
    command: IsolatedCommand,
) -> ExecResult:
    """Run `command` in the container; blocking (call it on the docker thread pool)."""
    timeout = command.timeout
    api = docker.APIClient(
        base_url=engine_url(shared_api), version=shared_api.api_version, timeout=int(timeout) + 30
    )
    wrapped = [
        *BASH,
        "--noprofile",
        "--norc",
        "-c",
        'echo "$$" >&2; exec "$@"',
        "tbrl-exec",
        *command.argv,
    ]
    exec_id = api.exec_create(
        container_id,
        wrapped,
        environment=command.env,
        workdir=command.workdir,
        user=command.user,
        stdout=True,
        stderr=True,
    )["Id"]
    out, err = bytearray(), bytearray()
    state: dict[str, Any] = {}

    def read() -> None:
        try:
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                if chunk_out:
                    out.extend(chunk_out)
                    if len(out) > MAX_STDOUT:
                        del out[: len(out) - MAX_STDOUT]
                if chunk_err and len(err) < MAX_STDERR:
                    err.extend(chunk_err)
            state["exit"] = api.exec_inspect(exec_id).get("ExitCode")
        except Exception as exc:  # noqa: BLE001 - surfaced to the caller below
            state["error"] = exc

    reader = threading.Thread(target=read, name="tbrl-exec", daemon=True)
    reader.start()
    reader.join(timeout)
    timed_out = reader.is_alive()
    if timed_out:
        _kill_all(api, container_id)
        reader.join(2.0)  # the stream ends once its process is dead
    api.close()
    if "error" in state and not timed_out:
        raise state["error"]
    pid_line, _, rest = bytes(err).partition(b"\n")
    return ExecResult(
        None if timed_out else state.get("exit"),
        bytes(out),
        rest if pid_line.strip().isdigit() else bytes(err),
        timed_out=timed_out,
    )


def _kill_all(api: Any, container_id: str) -> bool:
    """SIGKILL every process of the container except its init; True once a killer ran."""
    for _ in range(KILL_TRIES):
        done = threading.Event()

        def kill(done: threading.Event = done) -> None:  # this try's event, not a later one's
            try:
                kill_id = api.exec_create(
                    container_id, [*BASH, "--noprofile", "--norc", "-c", "kill -9 -1"], user="0:0"
                )["Id"]
                api.exec_start(kill_id)
                done.set()
            except Exception:  # noqa: BLE001 - a failed try is tried again; the caller is timed out anyway
                pass

        killer = threading.Thread(target=kill, name="tbrl-exec-kill", daemon=True)
        killer.start()
        killer.join(KILL_TRY_S)
        if done.is_set():
            return True
    return False
