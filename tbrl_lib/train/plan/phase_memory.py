"""The run's memory beside its plan: each measured phase's peak (`RunClock`, in
`tbrl_lib.process_memory`) next to what the planner said (`phase_table`), and the phases that
passed it (`over_plan`)."""

from __future__ import annotations

from tbrl_lib.process_memory import RunClock

OVER_PLAN = 0.15
"""A phase whose peak passes its plan by more than this share is named on the console."""


def phase_table(planned: dict[str, float], clock: RunClock) -> dict[str, dict[str, float]]:
    """summary.json's `memory.phases`: per measured phase, its plan (None: none) and peak."""
    rows: dict[str, dict[str, float]] = {}
    for name, peak in clock.peaks.items():
        row = {"planned_gib": planned.get(name), "peak_gib": round(peak, 2)}
        if name in clock.children:
            row["children_peak_gib"] = round(clock.children[name], 2)
        rows[name] = row
    return rows


def over_plan(phases: dict[str, dict[str, float]]) -> list[str]:
    """One line per phase whose peak passes its plan by more than `OVER_PLAN`."""
    lines = []
    for name, row in phases.items():
        plan, peak = row.get("planned_gib"), row["peak_gib"]
        if plan and peak > plan * (1 + OVER_PLAN):
            lines.append(
                f"memory: phase {name!r} peaked at {peak:.2f} GiB, {peak / plan - 1:+.0%} over "
                f"its plan of {plan:.2f} GiB"
            )
    return lines
