"""Learning benchmark: does the demo preset's GRPO raise the reward, on several seeds?

    python benchmarks/bench_learning.py                    # cpu-demo, seeds 0 1 2
    python benchmarks/bench_learning.py --seeds 0 --set grpo.max_steps=8
    python benchmarks/bench_learning.py --reuse            # table again from finished runs

Per seed, one full `train()` of the preset (SFT warm start, GRPO, held-out evaluations) and
one row: TRL's `train/reward` averaged over the first 3 and the last 3 GRPO steps and their
difference (the rise), the mean `frac_reward_zero_std` (share of groups with no reward
variance, after dynamic sampling's refill), dynamic sampling's refilled groups, the
held-out solve rate of the base model, the warm start and the final model (Wilson 95%
intervals), the paired difference final - warm start, and the wall time.

Baseline, in the same run: each seed's own warm start (the `sft` column) - what the policy
did before GRPO. Goals (issue #12): rise >= 0.15 on every seed, zero-std share < 0.5,
final >= warm start on held-out instances.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

from tbrl_lib.console import console
from tbrl_lib.overrides import parse_overrides
from tbrl_lib.train.grpo.run import train

RISE_GOAL, ZERO_STD_GOAL = 0.15, 0.5


def run_seed(seed: int, preset: str, overrides: dict, out: Path, reuse: bool) -> dict:
    """The seed's run summary: trained now, or read back from `out/seed-N` with `reuse`."""
    saved = out / f"seed-{seed}" / "summary.json"
    if reuse and saved.is_file():
        return json.loads(saved.read_text())
    return train(preset, {**overrides, "seed": seed}, out / f"seed-{seed}")


def seed_row(seed: int, summary: dict) -> dict:
    """One table row from a run summary (`train()`'s)."""
    trend = summary["reward_trend"]
    return {
        "seed": seed,
        "first3": trend["reward_first3"],
        "last3": trend["reward_last3"],
        "rise": trend["rise"],
        "zero_std": trend["zero_std_share"],
        "refilled": summary["dynamic_sampling"].get("refilled_groups", 0.0),
        "heldout": {row["model"]: row for row in summary["heldout"]},
        "seconds": summary["wall_seconds"],
    }


def heldout_cell(row: dict | None) -> str:
    if row is None:
        return "-"
    return f"{row['solve_rate']:.2f} {row['interval (Wilson 95%)']}"


def report(rows: list[dict], preset: str) -> dict[str, bool]:
    """Print the table and the goal lines; returns each goal and whether it was met."""
    table = Table(title=f"GRPO learning on {preset} ({len(rows)} seeds)")
    for name in ("seed", "reward first 3", "reward last 3", "rise", "zero-std share", "refilled"):
        table.add_column(name, justify="right")
    for name in ("held-out base", "held-out sft", "held-out sft+grpo", "grpo - sft", "wall s"):
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
            f"{r['seconds']:.0f}",
        )
    out = console()
    out.print(table)
    goals = {
        f"rise >= {RISE_GOAL} on every seed": all(r["rise"] >= RISE_GOAL for r in rows),
        f"zero-std share < {ZERO_STD_GOAL}": all(r["zero_std"] < ZERO_STD_GOAL for r in rows),
        "held-out sft+grpo >= sft": all(
            r["heldout"]["grpo"]["solve_rate"] >= r["heldout"]["warm start"]["solve_rate"]
            for r in rows
            if "grpo" in r["heldout"] and "warm start" in r["heldout"]
        ),
    }
    for goal, met in goals.items():
        out.print(f"{'met   ' if met else 'MISSED'}  {goal}")
    return goals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench-learning"))
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="read a seed's finished run (out/seed-N/summary.json) instead of training it again",
    )
    args = parser.parse_args()
    overrides = parse_overrides(args.overrides)
    rows = []
    for seed in args.seeds:
        summary = run_seed(seed, args.preset, overrides, args.out, args.reuse)
        rows.append(seed_row(seed, summary))
    report(rows, args.preset)
    (args.out / "bench_learning.json").write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
