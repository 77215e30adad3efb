"""The infra-rate stop: a run whose rollouts are mostly infrastructure errors stops, naming them.

An infra error (sandbox, engine or model backend failed) never teaches the model anything:
the rollout is masked. A run where most rollouts are masked measures the machines, not the
model, so once at least `check_after` rollouts have run (a step's worth), more than
`max_rate` of them failing stops training with `InfraErrorRateExceeded` and the first
errors. The counts cover every process's rollouts (the runner gathers them), and they are
saved with each checkpoint, so a resumed run keeps counting. Left out: per-host rates.
"""

from __future__ import annotations

from typing import Any


class InfraErrorRateExceeded(RuntimeError):
    """Too many rollouts were infrastructure errors: the run measures the machines, not the model."""


class InfraErrorGuard:
    """Counts rollouts and infra errors over the run; raises past `max_rate`."""

    def __init__(self, max_rate: float = 1.0, check_after: int = 1) -> None:
        self.max_rate, self.check_after = max_rate, check_after
        self.total = 0
        self.errors: list[str] = []
        """`task_id: error` of every infra error so far, in order."""

    def record(self, rows: list[dict[str, Any]]) -> None:
        """Count `rollout_row`s; raise `InfraErrorRateExceeded` when the rate is past the limit."""
        self.total += len(rows)
        self.errors += [f"{r['task_id']}: {r['error']}" for r in rows if r["infra_error"]]
        rate = len(self.errors) / self.total if self.total else 0.0
        if self.total >= self.check_after and rate > self.max_rate:
            first = "\n  ".join(self.errors[:5])
            raise InfraErrorRateExceeded(
                f"{len(self.errors)} of {self.total} rollouts ({rate:.0%}) were infrastructure "
                f"errors, above grpo.max_infra_error_rate={self.max_rate:g}; training stopped "
                f"(these rollouts teach nothing). First errors:\n  {first}"
            )
