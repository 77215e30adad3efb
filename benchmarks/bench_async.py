"""Asynchronous vs synchronous GRPO: one preset, the same seeds, both modes in one run.

    python benchmarks/bench_async.py                                   # cpu-demo, seeds 0 1 2
    python benchmarks/bench_async.py --preset cpu-smoke --seeds 0 --set grpo.max_steps=5 \
        --set curriculum.filter_after_groups=0
    python benchmarks/bench_async.py --reuse                           # table again

Per seed and mode (`grpo.async_rollouts` false / true), one full `train()` and one row:
steps per hour and rollouts per hour of GRPO step time (TRL's `step_time`: the step's
generation, or its wait for the worker, plus forward/backward; not the optimizer update nor
held-out evaluations, which both modes spend alike), the run's wall seconds, the share of step
time the trainer waited for rollouts (async: `async/wait_s`; sync: all its generation, which
is not measured apart, so `-`), the machine's CPU busy share during the GRPO steps (`CpuBusy`:
what an overlap could still use), mean staleness, the rollouts dropped as stale, the reward
rise (first 3 vs last 3 steps) and the held-out solve rate after the warm start and after
GRPO. The speed-up line divides async
steps/h by sync steps/h per seed. The projection to GPU clusters is `project_async.py`.
"""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path
from statistics import mean

from rich.table import Table

from tbrl_lib.console import console
from tbrl_lib.overrides import merge, parse_overrides
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.training import train
from tbrl_lib.train.report.run_files import load_metrics

MODES = {"sync": False, "async": True}


class CpuBusy:
    """The machine's CPU busy share (`/proc/stat`), sampled every second from the run's first
    saved step (a file in `trajectories/`) to its end: how much of the cores the GRPO steps
    left idle, which is all an overlap of generation and training could use."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.samples = folder, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _times() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, sum(fields)

    def _run(self) -> None:
        last = None
        while not self._stop.wait(1.0):
            if not any((self.folder / "trajectories").glob("*.jsonl")):
                continue
            busy, total = self._times()
            if last is not None and total > last[1]:
                self.samples.append((busy - last[0]) / (total - last[1]))
            last = (busy, total)

    def __enter__(self) -> CpuBusy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        (self.folder / "cpu_busy.json").write_text(json.dumps({"samples": self.samples}))


def run_mode(seed: int, mode: str, preset: str, overrides: dict, out: Path, reuse: bool) -> Path:
    """The run folder of `seed` in `mode`: trained now, or found with `reuse`."""
    folder = out / f"seed-{seed}-{mode}"
    if not (reuse and (folder / "summary.json").is_file()):
        settings = merge(overrides, {"seed": seed, "grpo": {"async_rollouts": MODES[mode]}})
        with CpuBusy(folder):
            train(load_preset(preset, settings), folder)
    return folder


def mode_row(seed: int, mode: str, folder: Path) -> dict:
    """One table row from a finished run folder."""
    summary = json.loads((folder / "summary.json").read_text())
    metrics = load_metrics(folder)
    step_s = float(metrics["train/step_time"].sum())
    steps, rollouts = summary["steps"], summary["rollouts"]
    heldout = {row["model"]: row["solve_rate"] for row in summary["heldout"]}
    wait = metrics.get("train/async/wait_s")
    staleness = metrics.get("train/async/staleness_mean")
    dropped = metrics.get("train/async/stale_dropped_rollouts")
    busy_file = folder / "cpu_busy.json"
    cpu = json.loads(busy_file.read_text())["samples"] if busy_file.is_file() else []
    return {
        "seed": seed,
        "mode": mode,
        "steps_h": 3600 * steps / step_s,
        "rollouts_h": 3600 * rollouts / step_s,
        "wall_s": summary["wall_seconds"],
        "wait_share": float(wait.sum()) / step_s if wait is not None else None,
        "staleness": float(staleness.mean()) if staleness is not None else 0.0,
        "stale_dropped": float(dropped.max()) if dropped is not None else 0.0,
        "cpu_busy": mean(cpu) if cpu else None,
        "rise": summary["reward_trend"].get("rise"),
        "heldout": (heldout.get("warm start", heldout.get("base")), heldout.get("grpo")),
    }


def cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="cpu-demo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--set", dest="sets", action="append", default=[])
    parser.add_argument("--out", type=Path, default=Path("outputs/bench-async"))
    parser.add_argument("--reuse", action="store_true", help="read finished runs back")
    args = parser.parse_args()
    overrides = parse_overrides(args.sets)
    rows = [
        mode_row(seed, mode, run_mode(seed, mode, args.preset, overrides, args.out, args.reuse))
        for seed in args.seeds
        for mode in MODES
    ]
    table = Table(title=f"sync vs async GRPO, {args.preset}")
    for name in ("seed", "mode", "steps/h", "rollouts/h", "wall s", "trainer waits",
                 "CPU busy", "staleness", "stale dropped", "rise",
                 "held-out before -> after"):  # fmt: skip
        table.add_column(name)
    for r in rows:
        before, after = r["heldout"]
        table.add_row(
            str(r["seed"]), r["mode"], cell(r["steps_h"], 0), cell(r["rollouts_h"], 0),
            cell(r["wall_s"], 0), cell(r["wait_share"]), cell(r["cpu_busy"]),
            cell(r["staleness"]), cell(r["stale_dropped"], 0), cell(r["rise"]),
            f"{cell(before)} -> {cell(after)}",
        )  # fmt: skip
    out = console()
    out.print(table)
    by = {(r["seed"], r["mode"]): r for r in rows}
    ups = [by[s, "async"]["steps_h"] / by[s, "sync"]["steps_h"] for s in args.seeds]
    out.print(
        "speed-up (async / sync steps per hour): "
        + ", ".join(f"seed {s}: {u:.2f}x" for s, u in zip(args.seeds, ups))
        + f"; mean {mean(ups):.2f}x"
    )
    (args.out / "table.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
