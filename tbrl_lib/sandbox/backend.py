"""The sandbox backend seam: where a run's sandboxes come from, chosen by name.

A backend does these things, and everything above `tbrl_lib.sandbox` asks it for them through
`backend_for(config)` (the registry is `registry.py`; `SandboxConfig.backend` names one, its
own settings sit under that name):

- `open(task, config)`: one rollout's `Sandbox`, an async context manager that removes it at
  the end (even on cancellation);
- `prepare(task)`: make the task's image ready before rollouts need it (a build failure is
  raised here as the task's or the infrastructure's `SandboxError`);
- `wait(why, wait_s, who, resume, idle)`: after an infra error, return False at once while the
  backend answers, else wait for it (bounded, saying so) and return True, or raise
  `EngineOutage` (resumable);
- `reap(run_id)`: remove the leftovers of dead processes (and of `run_id`'s lost nodes);
  `prune_caches()`: remove the caches nothing uses (rebuilt on demand);
- `check(purpose)` and `capacity()`: refuse before anything starts when nothing answers, and
  say how many sandboxes may run at once;
- `preflight(demand)`: what refuses a run before it starts (training's preflight asks it),
  and `doctor()`: its rows in `tbrl doctor`;
- the verifier's read-only runtime: every `Sandbox` it opens has tbrl's runtime at
  `runtime_dir` (`sandbox/runtime.py`) and the isolated operations `exec_isolated` and
  `put_archive`, done where the container is.

Left out: choosing a backend per task (one run, one backend) and mixing backends in a run.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Protocol

from tbrl_lib.sandbox.base import Sandbox
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task


@dataclass(frozen=True)
class Place:
    """Where sandboxes can run: one Docker engine, or one node of a cluster."""

    name: str
    capacity: int
    """Sandboxes it may hold at once."""
    free: int | None = None
    """Of those, not held now (None when the backend cannot tell)."""


@dataclass(frozen=True)
class Capacity:
    """What `capacity()` reports: the places and, in total, how many sandboxes at once."""

    backend: str
    places: tuple[Place, ...] = ()
    shared: bool = False
    """True when the capacity is one pool for every process and node of a job (Ray's
    scheduler counts it), False when each node counts its own (Docker's file-lock slots)."""
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(p.capacity for p in self.places)


@dataclass(frozen=True)
class Demand:
    """What a run asks of its backend at once: `per_process` sandboxes in flight in each of
    its `processes` (`per_node` of them on each node)."""

    per_process: int
    processes: int = 1
    per_node: int = 1

    @property
    def in_flight(self) -> int:
        return self.per_process * self.processes


@dataclass(frozen=True)
class Finding:
    """One row a backend adds to `tbrl doctor`."""

    component: str
    ok: bool
    found: str
    fix: str = ""
    """When not ok: what it disables, then how to fix it."""
    required: bool = False
    """A failed required row makes `tbrl doctor` exit non-zero."""


def shared_capacity_problems(capacity: Capacity, demand: Demand) -> list[str]:
    """A job's sandboxes in flight past a capacity that is one pool for the whole job."""
    if not capacity.shared or demand.in_flight <= capacity.total:
        return []
    places = ", ".join(f"{p.name}: {p.capacity}" for p in capacity.places)
    return [
        f"{demand.in_flight} sandboxes in flight ({demand.per_process} x {demand.processes} "
        f"process(es)) but the {capacity.backend} backend offers {capacity.total} at once "
        f"({places}): lower launch.sandbox_concurrency or add sandbox capacity"
    ]


class SandboxBackend(Protocol):
    """A place sandboxes come from (see module docstring); one module per backend."""

    name: str

    def open(self, task: Task, config: SandboxConfig) -> AbstractAsyncContextManager[Sandbox]:
        """`async with backend.open(task, config) as sandbox:` one rollout's sandbox."""
        ...

    async def prepare(self, task: Task) -> None:
        """The task's image ready where sandboxes run (or raise its `SandboxError`)."""
        ...

    async def wait(
        self, why: str, wait_s: float, who: str, resume: str, idle: bool = False
    ) -> bool:
        """False while the backend answers; else wait up to `wait_s` (True once back) or
        raise `EngineOutage` ending with `resume`. `who` starts every message. `idle`: this
        process opens no sandbox meanwhile, so what the outage stranded may be removed."""
        ...

    def reap(self, run_id: str | None = None) -> list[str]:
        """Remove leftovers of dead tbrl processes; one line per place it cleaned."""
        ...

    def prune_caches(self) -> list[str]:
        """Remove the caches no sandbox uses (rebuilt on demand); one line per place."""
        ...

    def preflight(self, demand: Demand) -> list[str]:
        """What refuses a run asking `demand` before anything starts (it does not answer, it
        holds fewer sandboxes); empty to go. Bounded: seconds at most."""
        ...

    def doctor(self) -> list[Finding]:
        """Its rows in `tbrl doctor`: what answers, where, how much is free. Never raises."""
        ...

    def check(self, purpose: str) -> str:
        """One line naming what answers, or `EngineUnavailable` saying `purpose` needs it."""
        ...

    def capacity(self) -> Capacity:
        """How many sandboxes may run at once, where (preflight and `tbrl doctor` ask)."""
        ...

    async def close(self) -> None:
        """Give back what this process holds beyond open sandboxes (warm pools, ...)."""
        ...
