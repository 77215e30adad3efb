"""The sandbox seam: what an episode, a verifier and a validator may ask of a container.

Everything above `tbrl_lib.sandbox` talks to this `Protocol`, never to Docker directly,
so a rollout is the same code whether the container is local, on another Docker host,
or handed out by a warm pool. All methods are async: a GRPO step drives hundreds of
rollouts concurrently from one event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class SandboxError(RuntimeError):
    """The infrastructure failed (daemon gone, container died, OOM-kill of the shell).

    Distinct from the agent failing its task: rewards mark such rollouts `infra_error`
    so training can mask them instead of teaching the model it failed.
    `kind` names what failed (e.g. "daemon_unreachable", "container_died", "build_failed").
    """

    def __init__(self, message: str = "", kind: str = "infra") -> None:
        super().__init__(message)
        self.kind = kind


class SandboxLimitExceeded(SandboxError):
    """A hard limit ended the rollout: wall clock, pids, memory. `kind` names which."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message, kind)


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


@runtime_checkable
class Sandbox(Protocol):
    """One rollout's container with one persistent shell (cd/export persist)."""

    stats: SandboxStats

    async def run(self, cmd: str, timeout: float | None = None) -> CommandResult: ...

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None: ...

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes: ...

    async def __aenter__(self) -> Sandbox: ...

    async def __aexit__(self, *exc: object) -> None: ...
