"""Learning benchmark: does a preset's GRPO raise the reward and the held-out solve rate, on
several seeds?

    python benchmarks/bench_learning.py                             # cpu-demo, seeds 0 1 2
    python benchmarks/bench_learning.py --preset cpu-smollm2-learn  # SmolLM2 on 3 families
    python benchmarks/bench_learning.py --seeds 0 --set grpo.max_steps=8
    python benchmarks/bench_learning.py --reuse                     # tables again from finished runs

Per seed, one full `train()` of the preset (SFT warm start, GRPO, held-out evaluations), each
in a process of its own (so its peak memory is its own), and:

- a row of the learning table: TRL's `train/reward` averaged over the first 3 and the last 3
  GRPO steps and their difference (the rise), the mean `frac_reward_zero_std` (share of groups
  with no reward variance, after dynamic sampling's refill), the held-out solve rate of the
  base model, the warm start (SFT) and the final model (SFT+GRPO) pooled over the families
  (Wilson 95% intervals), the paired difference final - warm start, and `train()`'s minutes;
- with several families, a row per family: base, SFT, SFT+GRPO and both paired differences
  (95% bootstrap over the family's instances), and the easiest bundled tasks' solve rates;
- a row of the cost table: wall seconds per phase, the memory plan beside the peak resident
  memory, the CPU busy share of the machine during the GRPO steps and its 1-minute load
  average when the seed started (the load the seed ran under);
- its memory per phase (`run_report.memory_table`: the plan, the peak, the plan at the
  batches the phase reached) and GRPO's step 2 beside its last step (growth).

Baseline, in the same run: each seed's own warm start (the `sft` column), what the policy did
before GRPO. Goals: rise >= 0.15 on every seed, zero-std share < 0.5, final >= warm start
(issue #12, the tiny demo); with several families (issue #33): on every seed the pooled
final - warm start >= +0.15 with its interval above 0, the same on at least 2 families on
their own, and `train()` within 30 minutes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from pathlib import Path
from statistics import mean

from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `benchmarks.bench_async`, for a plain `python benchmarks/...`

from benchmarks.bench_async import CpuBusy  # noqa: E402
from tbrl_lib.console import console  # noqa: E402
from tbrl_lib.overrides import parse_overrides  # noqa: E402
from tbrl_lib.train.config.presets import load_preset  # noqa: E402
from tbrl_lib.train.grpo.training import train  # noqa: E402
from tbrl_lib.train.report.run_report import memory_table  # noqa: E402

RISE_GOAL, ZERO_STD_GOAL = 0.15, 0.5
GAIN_GOAL, FAMILIES_GOAL, MINUTES_GOAL = 0.15, 2, 30.0
PHASES = ("base evaluation", "warm start", "warm start evaluation", "grpo", "final evaluation")


def _train_seed(preset: str, settings: dict, folder: Path) -> None:
    """The child process's work: one run, its summary written to `folder`."""
    with CpuBusy(folder):
        train(load_preset(preset, settings), folder)


def run_seed(seed: int, preset: str, overrides: dict, out: Path, reuse: bool) -> dict:
    """The seed's run summary: trained now in a process of its own, or read back from
    `out/seed-N` with `reuse`."""
    folder = out / f"seed-{seed}"
    saved = folder / "summary.json"
    if not (reuse and saved.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "load_before.json").write_text(json.dumps(os.getloadavg()))
        child = multiprocessing.get_context("spawn").Process(
            target=_train_seed, args=(preset, {**overrides, "seed": seed}, folder)
        )
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit(f"seed {seed}: train() failed (exit {child.exitcode}); see above")
    return json.loads(saved.read_text())


def _read(folder: Path, name: str) -> object:
    path = folder / name
    return json.loads(path.read_text()) if path.is_file() else None


def seed_row(seed: int, summary: dict, folder: Path | None = None) -> dict:
    """One seed's numbers from its run summary (and, when given, its folder's load files)."""
    trend = summary["reward_trend"]
    busy = _read(folder, "cpu_busy.json") if folder else None
    load = _read(folder, "load_before.json") if folder else None
    return {
        "seed": seed,
        "first3": trend["reward_first3"],
        "last3": trend["reward_last3"],
        "rise": trend["rise"],
        "zero_std": trend["zero_std_share"],
        "refilled": summary["dynamic_sampling"].get("refilled_groups", 0.0),
        "heldout": {row["model"]: row for row in summary["heldout"]},
        "families": summary.get("heldout_by_family", []),
        "bundled": {row["model"]: row for row in summary.get("heldout_bundled", [])},
        "seconds": summary["wall_seconds"],
        "phases": summary.get("phase_seconds", {}),
        "memory": summary.get("memory", {}),
        "cpu_busy": mean(busy["samples"]) if busy and busy["samples"] else None,
        "load_before": load[0] if load else None,
    }


def heldout_cell(row: dict | None) -> str:
    if row is None:
        return "-"
    return f"{row['solve_rate']:.2f} {row['interval (Wilson 95%)']}"


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def gain_met(row: dict | None) -> bool:
    """A paired difference of at least GAIN_GOAL whose interval lies above 0."""
    return bool(row and row["difference"] >= GAIN_GOAL and row["difference_ci"][0] > 0)


def learning_table(rows: list[dict], preset: str) -> Table:
    table = Table(title=f"GRPO learning on {preset} ({len(rows)} seeds)")
    for name in ("seed", "reward first 3", "reward last 3", "rise", "zero-std share", "refilled"):
        table.add_column(name, justify="right")
    for name in ("held-out base", "held-out sft", "held-out sft+grpo", "grpo - sft", "train() min"):
        table.add_column(name, justify="right")
    for r in rows:
        final = r["heldout"].get("grpo")
        table.add_row(
            str(r["seed"]),
            f"{r['first3']:.3f}",
            f"{r['last3']:.3f}",
            f"{r['rise']:+.3f}",
            f"{r['zero_std']:.2f}",
            f"{r['refilled']:.0f}",
            heldout_cell(r["heldout"].get("base")),
            heldout_cell(r["heldout"].get("warm start")),
            heldout_cell(final),
            (final or {}).get("vs_previous", "-"),
            f"{r['seconds'] / 60:.1f}",
        )
    return table


def family_table(rows: list[dict]) -> Table:
    table = Table(title="held-out solve rate per family (paired differences, 95% bootstrap)")
    for name in ("seed", "family", "instances", "base", "sft", "sft+grpo", "sft - base"):
        table.add_column(name, justify="right")
    table.add_column("grpo - sft", justify="right")
    for r in rows:
        by = {(f["family"], f["model"]): f for f in r["families"]}
        for family in dict.fromkeys(f["family"] for f in r["families"]):
            cells = [by.get((family, m)) for m in ("base", "warm start", "grpo")]
            table.add_row(
                str(r["seed"]),
                family,
                str(max(c["instances"] for c in cells if c)),
                *(number(c and c["solve_rate"]) for c in cells),
                *((c or {}).get("vs_previous", "-") for c in cells[1:]),
            )
        if r["bundled"]:
            cells = [r["bundled"].get(m) for m in ("base", "warm start", "grpo")]
            count = max(c["tasks"] for c in cells if c)
            table.add_row(
                str(r["seed"]),
                "bundled",
                str(count),
                *(number(c and c["solve_rate"]) for c in cells),
                "-",
                "-",
            )
    return table


def cost_table(rows: list[dict]) -> Table:
    table = Table(title="where the time and memory went (seconds per phase)")
    for name in ("seed", *PHASES, "total", "plan GiB", "peak RSS GiB", "CPU busy", "load"):
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(
            str(r["seed"]),
            *(number(r["phases"].get(p), 0) for p in PHASES),
            number(r["seconds"], 0),
            number(r["memory"].get("plan_gib")),
            number(r["memory"].get("peak_rss_gib")),
            number(r["cpu_busy"]),
            number(r["load_before"]),
        )
    return table


def growth_line(memory: dict) -> str:
    """GRPO's step 2 beside its last step: the peak (it follows the step's longest rollouts),
    the plan at that step's own batches, and what stayed resident after the step (what grows
    when something leaks)."""
    parts = []
    for key, what in (
        ("steps", "peak"),
        ("steps_reached_plan", "plan at its batches"),
        ("steps_resident", "resident after"),
    ):
        values = memory.get(key) or []
        if len(values) > 1 and values[1] is not None and values[-1] is not None:
            parts.append(f"{what} step 2 {values[1]:.2f} -> last {values[-1]:.2f}")
    return "; ".join(parts) or "no GRPO steps"


def goals_of(rows: list[dict]) -> dict[str, bool]:
    """Each goal and whether every seed met it (the family goals only with several families)."""
    goals = {
        f"rise >= {RISE_GOAL} on every seed": all(r["rise"] >= RISE_GOAL for r in rows),
        f"zero-std share < {ZERO_STD_GOAL}": all(r["zero_std"] < ZERO_STD_GOAL for r in rows),
        "held-out sft+grpo >= sft": all(
            r["heldout"]["grpo"]["solve_rate"] >= r["heldout"]["warm start"]["solve_rate"]
            for r in rows
            if "grpo" in r["heldout"] and "warm start" in r["heldout"]
        ),
    }
    if not all(len({f["family"] for f in r["families"]}) > 1 for r in rows):
        return goals
    per_family = [
        [f for f in r["families"] if f["model"] == "grpo" and f["family"] != "all"] for r in rows
    ]
    pooled = [
        next(f for f in r["families"] if f["model"] == "grpo" and f["family"] == "all")
        for r in rows
    ]
    goals |= {
        f"pooled sft+grpo - sft >= +{GAIN_GOAL}, interval above 0, every seed": all(
            map(gain_met, pooled)
        ),
        f"the same on >= {FAMILIES_GOAL} families on their own, every seed": all(
            sum(map(gain_met, families)) >= FAMILIES_GOAL for families in per_family
        ),
        f"train() <= {MINUTES_GOAL:g} min every seed": all(
            r["seconds"] <= 60 * MINUTES_GOAL for r in rows
        ),
    }
    return goals


def report(rows: list[dict], preset: str) -> dict[str, bool]:
    """Print the tables and the goal lines; returns each goal and whether it was met."""
    out = console()
    out.print(learning_table(rows, preset))
    if any(r["families"] for r in rows):
        out.print(family_table(rows))
    if any(r["phases"] for r in rows):
        out.print(cost_table(rows))
    for r in rows:
        if r["memory"].get("phases"):
            out.print(f"seed {r['seed']}: memory per phase (GiB), {growth_line(r['memory'])}")
            out.print(memory_table({"memory": r["memory"]}).to_string())
    goals = goals_of(rows)
    for goal, met in goals.items():
        out.print(f"{'met   ' if met else 'MISSED'}  {goal}")
    return goals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    parser.add_argument(
        "--out", type=Path, default=None, help="default outputs/bench-learning-<preset>"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="read a seed's finished run (out/seed-N/summary.json) instead of training it again",
    )
    args = parser.parse_args()
    out = args.out or Path(f"outputs/bench-learning-{args.preset}")
    overrides = parse_overrides(args.overrides)
    rows = []
    for seed in args.seeds:
        summary = run_seed(seed, args.preset, overrides, out, args.reuse)
        rows.append(seed_row(seed, summary, out / f"seed-{seed}"))
    report(rows, args.preset)
    (out / "bench_learning.json").write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
