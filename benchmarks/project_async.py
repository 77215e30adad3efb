"""Projected steps per hour of sync vs async GRPO on the presets' machines (issue 26).

    python benchmarks/project_async.py                         # cpu-demo, 8xh100, 32xh100
    python benchmarks/project_async.py --runs outputs/bench-async/seed-0-sync \
        outputs/bench-async/seed-0-async                        # measured durations, train s
    python benchmarks/project_async.py --presets 32xh100 --sigma 1.2 --max-staleness 2

A seeded simulation (`benchmarks/async_projection.py`) plays both schedules per preset
and prints one row per preset and mode: training GPUs, training seconds per step, episode
slots C, steps/h, trainer utilisation (share of wall time training), generator utilisation
(mean share of the C slots running an episode), mean staleness of trained groups, dropped
share; then the async/sync speed-up per preset and every assumption.

Durations: without --runs, a lognormal (median `--median-s`, `--sigma`) capped at the preset's
episode limit. With --runs, the `seconds` of every rollout those run folders saved: as measured
for a CPU preset, and for a GPU preset their shape (divided by its median) rescaled to
`--median-s` and capped. A CPU preset's training seconds come from --train-s, else from an
async run folder among --runs (TRL's step_time minus the trainer's wait for the worker), else
the README's ~5 s; a GPU preset's from a FLOPs model. With --runs each folder's own measured
steps/h of step time is printed as well, to set beside the cpu-demo rows.
Left out: everything `async_projection` leaves out (its docstring).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from statistics import median

from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `benchmarks.async_projection`, for a plain `python benchmarks/...`

from benchmarks.async_projection import (  # noqa: E402
    MODES,
    ClusterAssumptions,
    PresetPlan,
    empirical,
    general_assumptions,
    lognormal,
    plan_preset,
    preset_shape,
    project,
    run_durations,
)
from tbrl_lib.console import console  # noqa: E402
from tbrl_lib.train.config.config import TrainConfig  # noqa: E402
from tbrl_lib.train.config.presets import load_preset, preset_names  # noqa: E402

PRESETS = ["cpu-demo", "8xh100", "32xh100"]


def run_numbers(folder: Path) -> dict:
    """A finished run's mode, measured steps/h of step time, and (async) training seconds a
    step: median of TRL's step_time minus `async/wait_s`."""
    from tbrl_lib.train.report.run_files import load_metrics  # loads transformers: only with --runs

    config = json.loads((folder / "config.json").read_text())["tbrl"]
    metrics = load_metrics(folder)
    step_time = metrics["train/step_time"].dropna()
    wait = metrics.get("train/async/wait_s")
    train_s = None
    if wait is not None:
        train_s = float(median((metrics["train/step_time"] - wait).dropna()))
    return {
        "folder": folder,
        "mode": "async" if config["grpo"]["async_rollouts"] else "sync",
        "steps_h": 3600 * len(step_time) / float(step_time.sum()),
        "train_s": train_s,
    }


def async_twin(preset: str) -> TrainConfig:
    """The async row's config: the `<preset>-async` preset where one exists (its own GPU
    split and staleness bound), else `preset` itself with `grpo.async_rollouts` on."""
    name = f"{preset}-async"
    if name in preset_names():
        return load_preset(name, {})
    return load_preset(preset, {"grpo.async_rollouts": True})


def sampler_for(plan: PresetPlan, durations: list[float] | None, sigma: float):
    if durations is None:
        return lognormal(plan.median_s, sigma, plan.cap_s)
    if plan.train_gpus == 0:
        return empirical([min(d, plan.cap_s) for d in durations])
    return preset_shape(durations, plan.median_s, plan.cap_s)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", nargs="+", default=PRESETS)
    parser.add_argument("--runs", type=Path, nargs="+", default=[], help="finished run folders")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--max-staleness", type=int, help="async rows (default: the async preset's own)"
    )
    parser.add_argument("--steps-ahead", type=int, default=1, help="async what-if (design: 1)")
    parser.add_argument("--train-s", type=float, help="CPU presets: training seconds a step")
    defaults = ClusterAssumptions()
    for name in ("median_s", "sigma", "tokens_per_rollout", "mfu", "colocate_serve_gpus"):
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=type(getattr(defaults, name)), default=None)
    args = parser.parse_args(argv)
    assumed = replace(
        defaults,
        **{
            k: v
            for k in ("median_s", "sigma", "tokens_per_rollout", "mfu", "colocate_serve_gpus")
            if (v := getattr(args, k)) is not None
        },
    )
    runs = [run_numbers(folder) for folder in args.runs]
    durations = [d for folder in args.runs for d in run_durations(folder)] if runs else None
    train_s = args.train_s
    if train_s is None:
        train_s = next((r["train_s"] for r in runs if r["train_s"] is not None), None)
    source = (
        f"{len(durations)} rollouts of {', '.join(str(f) for f in args.runs)} (median "
        f"{median(durations):.2f} s)"
        if durations
        else f"lognormal, sigma {assumed.sigma}"
    )

    table = Table(title=f"sync vs async GRPO, projected ({source}; {args.steps} steps, "
                  f"seeds {args.seeds}, "
                  f"steps ahead {args.steps_ahead})")  # fmt: skip
    for name in ("preset", "mode", "train GPUs", "train s/step", "C", "steps/h", "trainer util",
                 "generator util", "staleness", "dropped"):  # fmt: skip
        table.add_column(name)
    results, notes = {}, []
    for preset in args.presets:
        configs = {"sync": load_preset(preset, {}), "async": async_twin(preset)}
        results[preset] = {}
        for mode in MODES:
            config = configs[mode]
            staleness = args.max_staleness
            if staleness is None:
                staleness = config.grpo.max_staleness
            plan = plan_preset(config, mode, assumed, train_s)
            work = plan.workload(args.steps, staleness, args.steps_ahead)
            result = project(work, sampler_for(plan, durations, assumed.sigma), args.seeds)[mode]
            results[preset][mode] = result
            said = [x for x in plan.assumes if f"{preset}: {x}" not in notes]  # async: its own
            notes += [f"{config.preset}{'' if mode == 'sync' else ' async'}: {x}" for x in said]
            if mode == "async":
                notes.append(f"{config.preset} async: max_staleness {staleness}")
            table.add_row(
                preset, mode, str(plan.train_gpus) if plan.train_gpus else "CPU",
                f"{plan.train_s:.1f}", str(plan.slots), f"{result.steps_per_hour:.1f}",
                f"{result.trainer_utilisation:.2f}", f"{result.generator_utilisation:.2f}",
                f"{result.staleness_mean:.2f}", f"{result.dropped_share:.2f}",
            )  # fmt: skip
    out = console()
    out.print(table)
    for preset, by_mode in results.items():
        up = by_mode["async"].steps_per_hour / by_mode["sync"].steps_per_hour
        out.print(f"{preset}: async / sync steps per hour = {up:.2f}x")
    for run in runs:
        out.print(
            f"measured, {run['folder']} ({run['mode']}): {run['steps_h']:.0f} steps/h of step "
            "time" + (f", training {run['train_s']:.1f} s a step" if run["train_s"] else "")
        )
    out.print("assumes:")
    for line in general_assumptions(assumed, source) + notes:
        out.print(f"  - {line}")
    return results


if __name__ == "__main__":
    main()
