"""Per-phase peak memory from the kernel: a phase's spike is its own, not the next one's, and
a phase over its plan is named in one line."""

from __future__ import annotations

import numpy as np
import pytest

from tbrl_lib.train.plan.phase_memory import RunClock, over_plan, phase_table, timed
from tbrl_lib.train.report.run_report import memory_table

MIB = 2**20


def touch(mib: int) -> None:
    """Make `mib` MiB resident, then free them."""
    block = np.ones(mib * MIB, dtype=np.uint8)
    assert block.sum() == mib * MIB


def test_each_phase_keeps_its_own_peak_and_its_seconds():
    clock = RunClock()
    if not clock.resettable:
        pytest.skip("this kernel does not let a process reset its high-water mark")
    with timed(clock, "spike"):
        touch(400)
    with timed(clock, "quiet"):
        touch(8)
    assert clock.peaks["spike"] - clock.peaks["quiet"] > 0.3  # GiB: the 400 MiB stayed there
    assert set(clock) == {"spike", "quiet"} and all(s >= 0 for s in clock.values())


def test_steps_inside_a_phase_count_towards_it():
    clock = RunClock()
    if not clock.resettable:
        pytest.skip("this kernel does not let a process reset its high-water mark")
    with timed(clock, "grpo"):
        touch(300)
        first = clock.mark_step()
        touch(8)
        clock.mark_step()
    assert clock.steps[0] == pytest.approx(first, abs=1e-3) and clock.steps[0] > clock.steps[1]
    assert clock.peaks["grpo"] >= first - 1e-3  # the step's spike, reset since, still counted


def test_a_phase_over_its_plan_by_more_than_15_percent_gets_one_line():
    clock = RunClock()
    clock.peaks.update({"grpo": 2.4, "warm start": 1.1, "base evaluation": 1.0})
    table = phase_table({"grpo": 2.0, "warm start": 1.0}, clock)
    assert table["base evaluation"]["planned_gib"] is None
    lines = over_plan(table)
    assert len(lines) == 1 and "'grpo'" in lines[0] and "+20%" in lines[0]
    shown = memory_table({"memory": {"phases": table}})
    assert list(shown.index) == ["grpo", "warm start", "base evaluation"]
    assert shown.loc["grpo", "peak / plan"] == "1.2"
