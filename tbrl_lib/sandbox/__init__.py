"""tbrl_lib.sandbox: one rollout's sandbox (a container with a persistent shell), from a
backend chosen by name.

Public API (everything above the sandbox uses only these and `base.Sandbox`):
`open_sandbox(task, config)`, `backend_for(config)` (prepare images, wait, reap, check,
capacity: `backend.SandboxBackend`), `reap_run(config)` (a run's leftovers, when it ends),
`SandboxConfig`, `DockerHost`, the errors in `base` and `tbrl_lib.engines`. The backends
live in `backends/` (`docker/`, `ray/`), registered by name in `registry.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tbrl_lib.engines import EngineOutage, EngineUnavailable
from tbrl_lib.sandbox.backend import Capacity, Demand, Finding, SandboxBackend
from tbrl_lib.sandbox.backends import backend_for, close_backends, reap_run
from tbrl_lib.sandbox.base import (
    CommandResult,
    FileTooLarge,
    IsolatedCommand,
    Sandbox,
    SandboxError,
    SandboxLimitExceeded,
    SandboxStats,
)
from tbrl_lib.sandbox.config import DockerHost, SandboxConfig
from tbrl_lib.sandbox.registry import BACKENDS, BackendNotInstalled
from tbrl_lib.tasks.model import Task


@asynccontextmanager
async def open_sandbox(task: Task, config: SandboxConfig | None = None) -> AsyncIterator[Sandbox]:
    """`async with open_sandbox(task, config) as sb:` one rollout's sandbox from
    `config.backend`, removed when the block ends (even on cancellation)."""
    config = config or SandboxConfig()
    async with backend_for(config).open(task, config) as sandbox:
        yield sandbox


__all__ = [
    "BACKENDS",
    "BackendNotInstalled",
    "Capacity",
    "CommandResult",
    "Demand",
    "DockerHost",
    "EngineOutage",
    "EngineUnavailable",
    "FileTooLarge",
    "Finding",
    "IsolatedCommand",
    "Sandbox",
    "SandboxBackend",
    "SandboxConfig",
    "SandboxError",
    "SandboxLimitExceeded",
    "SandboxStats",
    "backend_for",
    "close_backends",
    "open_sandbox",
    "reap_run",
]
