"""The sandbox seam: what an episode and a verifier may ask of a container.

Everything above `tbrl_lib.sandbox` talks to this `Protocol`, never to Docker directly,
so a rollout is the same code whether the container is local, on another Docker host,
or handed out by a warm pool. All methods are async: a GRPO step drives hundreds of
rollouts concurrently from one event loop.

The agent works through `run` (its persistent shell) and the file methods. The verifier
uses the isolated operations: `exec_isolated` (a fresh process started by the engine, not
by the agent's shell, with an explicit environment), `put_archive` (files written by the
engine), and `runtime_dir`, where tbrl's own interpreter and tools are mounted read-only.

Who is to blame when something fails, decided by cause, not by symptom:

- infrastructure (`SandboxError.infra`): an unreachable engine or cluster node (`node_lost`), a failed transport (a build
  step that could not reach the network included), a container that vanished or was stopped
  from outside (its init ignores every signal from inside), a container that could not be
  started, a build that ran out of time;
- the task (`SandboxError.task_fault`): its image cannot be made from what it ships - a
  Dockerfile step that fails, a base or prebuilt image this engine does not have and cannot
  substitute. Neither the agent's doing nor a machine's: reported per task, never scored,
  never retried;
- the agent: when the engine answers and the container runs, whatever went wrong inside it
  (a dead shell that cannot restart, the pids, memory or storage limit, the wall clock, a
  refused file operation) is the agent's doing and is scored. A storage limit removes the
  sandbox at once (the space goes back to the host), so there is nothing left to verify:
  such a rollout scores 0 (`REMOVED_AT_LIMIT`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class SandboxError(RuntimeError):
    """A sandbox operation failed; `kind` names what failed, `infra` and `task_fault` say
    whose fault it is.

    Infrastructure kinds ("daemon_unreachable", "container_died", "build_failed", ...) make
    a rollout `infra_error` (masked in training, retried in evaluation); the task's kinds
    (`TASK_KINDS`) make it a `task_error` (the task is skipped or reported, never scored);
    the agent's kinds ("pids", "memory", "storage", "wall_clock", "shell_broken",
    "exec_failed") are scored.
    """

    def __init__(self, message: str = "", kind: str = "infra") -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def infra(self) -> bool:
        """True when the infrastructure failed; False when the agent caused it (see module doc)."""
        return self.kind in INFRA_KINDS

    @property
    def task_fault(self) -> bool:
        """True when the task itself is broken (see module doc): fix the task, not the machine."""
        return self.kind in TASK_KINDS


INFRA_KINDS = frozenset(
    {
        "infra",
        "daemon_unreachable",
        "container_gone",
        "container_died",
        "start_timeout",
        "create_failed",
        "no_capacity",
        "build_failed",
        "build_timeout",
        "shell_failed",
        "runtime_failed",
        "image_missing",
        "pool_failed",
        "pool_timeout",
        "node_lost",
        "disk_space",
        "meter_failed",
    }
)
"""`SandboxError.kind`s that are infrastructure failures (`disk_space`: the engine's disk
cannot hold the sandbox's storage cap beside the others'; `meter_failed`: the storage meter
does not answer). The others are the agent's doing: `pids`, `memory`, `storage`,
`wall_clock` (limits), `shell_broken` (the shell died and no new one starts), `exec_failed`
(the engine refused an operation on a running container)."""
REMOVED_AT_LIMIT = frozenset({"storage"})
"""Limits that end the rollout by removing its sandbox (to give the host its disk back): the
verifier has nothing to run in, and the rollout scores 0."""
TASK_KINDS = frozenset({"task_build_failed", "task_image_missing"})
"""`SandboxError.kind`s that are the task's own defect: its Dockerfile does not build here
(a failing step, a base image that is neither on the engine nor substitutable), or its
prebuilt image is not on the engine."""


class SandboxClosed(RuntimeError):
    """A sandbox was used after it was closed: a bug in the caller, never an infra error."""


class FileTooLarge(ValueError):
    """A file transfer exceeded `SandboxConfig.max_file_bytes` (or the caller's limit)."""


class SandboxLimitExceeded(SandboxError):
    """A hard limit ended the rollout: wall clock, pids, memory, storage. `kind` names which;
    `limit` and `used` say how far past it, in `unit`, where they are known."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        limit: float | None = None,
        used: float | None = None,
        unit: str = "",
    ) -> None:
        super().__init__(message, kind)
        self.limit, self.used, self.unit = limit, used, unit

    def __reduce__(self):
        """Pickled whole (a Ray node raises it, the caller re-raises it): the default would
        call `SandboxLimitExceeded(message)` and fail."""
        return (type(self), (self.kind, str(self)), self.__dict__)

    def record(self) -> dict[str, str | float | None]:
        """Which limit and how far past it, for the trajectory."""
        return {"kind": self.kind, "limit": self.limit, "used": self.used, "unit": self.unit}


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    """None when the command was killed by its timeout."""
    output: str
    """stdout and stderr merged in order, decoded safely, capped with a truncation notice."""
    timed_out: bool = False
    truncated_bytes: int = 0
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class IsolatedCommand:
    """A process `exec_isolated` starts: `argv` with exactly `env`, as `user` in `workdir`,
    killed after `timeout` seconds."""

    argv: list[str]
    env: dict[str, str]
    timeout: float
    user: str = "0:0"
    workdir: str = "/"


@dataclass(frozen=True)
class ExecResult:
    """A process started with `exec_isolated`."""

    exit_code: int | None
    """None when it was still running at the deadline (then it was killed)."""
    stdout: bytes
    stderr: bytes
    timed_out: bool = False


@dataclass
class SandboxStats:
    """Recorded per rollout; reported under `sandbox/...` metrics."""

    commands: int = 0
    command_seconds: float = 0.0
    bytes_out: int = 0
    bytes_written: int = 0
    bytes_read: int = 0
    startup_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    place: str = ""
    """Where it runs beyond this machine: the Ray node's id (ray backend); empty when local."""


@runtime_checkable
class Sandbox(Protocol):
    """One rollout's container with one persistent shell (cd/export persist)."""

    stats: SandboxStats

    async def run(self, cmd: str, timeout: float | None = None) -> CommandResult: ...

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None: ...

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes: ...

    runtime_dir: str
    """Where tbrl's runtime (loader, interpreter, pytest, bash) is mounted read-only."""
    workdir: str
    """The directory the agent's shell starts in (tests run there too)."""

    async def exec_isolated(self, command: IsolatedCommand) -> ExecResult:
        """Start `command` as a new process of the container (not through the agent's shell),
        with exactly its `env`; wait at most its `timeout` s, then kill it (`timed_out`)."""
        ...

    async def put_archive(self, path: str, tar: bytes) -> None:
        """Extract a tar at `path` inside the container, written by the engine as root."""
        ...

    async def __aenter__(self) -> Sandbox: ...

    async def __aexit__(self, *exc: object) -> None: ...
