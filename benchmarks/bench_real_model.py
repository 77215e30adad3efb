"""What a real pretrained model does here: SmolLM2-135M-Instruct, base, after SFT, after GRPO.

    python benchmarks/bench_real_model.py                       # about 40-60 min on 2 cores
    python benchmarks/bench_real_model.py --bundled 3 --heldout 4 --demos 8 --grpo-steps 1
    python benchmarks/bench_real_model.py --reuse               # the table again from the runs

Phases, each timed (wall seconds):

1. fetch: `tbrl models fetch smollm2-135m` (cached after the first time);
2. base model on the first `--bundled` easy bundled tasks (`data/tasks`) through the eval
   harness, in a CPU-sized episode (compact system prompt, 3 replies of at most 96 tokens);
3. `train()` of the `cpu-smollm2` preset: the base model on `--heldout` held-out instances of
   `write_word`, an SFT warm start (LoRA, merged) on `--demos` oracle demonstrations, the
   warm start on the same held-out instances, `--grpo-steps` GRPO steps from it (LoRA), the
   final model on them again (paired intervals in the held-out table);
4. the warm start and the final model on the same bundled tasks.

Per model and task set: solve rate with its Wilson 95% interval, mean reward, the share of
replies with a parse error and with no action tag at all, mean turns. Baseline, in the same
run: the base model (what SFT and GRPO start from). The upstream reference point is
Terminal-Bench-RL's Qwen3-32B at 13.75% on Terminal-Bench 1 (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.table import Table

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.console import console
from tbrl_lib.evaluate.harness import run_eval
from tbrl_lib.evaluate.results import RunConfig, RunResults
from tbrl_lib.models import fetch, models_dir
from tbrl_lib.tasks import load_tasks
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.training import train

MODEL = "smollm2-135m"
BUNDLED_EPISODE = EpisodeLimits(
    system_prompt="compact", max_turns=3, max_tokens_per_turn=96, max_total_tokens=4096
)


def bundled_eval(policy: str, tasks: list, out: Path, reuse: bool) -> RunResults:
    """One attempt per task, rule judge, the CPU-sized episode (resumes a finished run)."""
    if reuse and (out / "results.json").is_file():
        return RunResults.load(out)
    config = RunConfig(
        policy=policy,
        tasks_source="data/tasks",
        concurrency=3,
        judge="rule",
        episode=BUNDLED_EPISODE,
    )
    return run_eval(tasks, config, out, progress=True)


def reply_stats(results: RunResults, folder: Path) -> dict[str, float]:
    """Share of replies with a parse error, with no action tag, and mean turns per trial."""
    replies = parse_errors = no_tag = 0
    turns = []
    for trial in results.trials:
        if not trial.trajectory:
            continue
        for traj in Trajectory.load_jsonl(folder / trial.trajectory):
            turns.append(len(traj.turns))
            for turn in traj.turns:
                replies += 1
                kinds = [c.kind for c in turn.calls]
                parse_errors += "parse_error" in kinds
                no_tag += not kinds
    return {
        "parse_error_share": parse_errors / max(replies, 1),
        "no_tag_share": no_tag / max(replies, 1),
        "mean_turns": sum(turns) / max(len(turns), 1),
        "replies": replies,
    }


def row(model: str, where: str, results: RunResults, folder: Path, seconds: float) -> dict:
    summary = results.summary
    low, high = summary["accuracy_ci"]
    return {
        "model": model,
        "tasks": where,
        "n": summary["n_scored"],
        "solve_rate": summary["accuracy"],
        "ci": [low, high],
        "mean_reward": summary["mean_reward"],
        "infra_errors": summary["infra_errors"],
        **reply_stats(results, folder),
        "seconds": round(seconds, 1),
    }


def timed(fn, *args):
    started = time.monotonic()
    value = fn(*args)
    return value, time.monotonic() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundled", type=int, default=6, help="easy bundled tasks evaluated")
    parser.add_argument("--heldout", type=int, default=8, help="held-out write_word instances")
    parser.add_argument("--demos", type=int, default=16, help="oracle demonstrations for SFT")
    parser.add_argument("--sft-epochs", type=float, default=3.0)
    parser.add_argument("--grpo-steps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("outputs/bench-real-model"))
    parser.add_argument("--reuse", action="store_true", help="read finished phases back")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    phases: dict[str, float] = {}

    _, phases["fetch"] = timed(fetch, MODEL, models_dir())
    easy = [t for t in load_tasks("data/tasks", progress=False).tasks if t.difficulty == "easy"]
    tasks = easy[: args.bundled]
    rows = []
    base, phases["base, bundled"] = timed(
        bundled_eval, f"hf:{MODEL}", tasks, out / "base-bundled", args.reuse
    )
    rows.append(row("base", "bundled", base, out / "base-bundled", phases["base, bundled"]))

    saved = out / "train" / "summary.json"
    if args.reuse and saved.is_file():
        summary = json.loads(saved.read_text())
    else:
        overrides = {
            "grpo": {"max_steps": args.grpo_steps},
            "sft": {"demos": args.demos, "epochs": args.sft_epochs},
            "heldout": {"instances": args.heldout},
        }
        summary = train(load_preset("cpu-smollm2", overrides), out / "train")
    run = Path(summary["run_dir"])
    heldout = {"base": "base", "sft": "sft", "sft+grpo": "final"}
    for name, folder in heldout.items():
        results = RunResults.load(run / "eval" / folder)
        phases[f"{name}, held-out"] = results.wall_seconds
        rows.append(row(name, "held-out", results, run / "eval" / folder, results.wall_seconds))
    phases["sft (demos + training)"] = summary["warm_start"]["seconds"]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    phases["grpo steps"] = sum(s.get("train/step_time", 0.0) for s in steps)
    phases["train() in all"] = summary["wall_seconds"]

    for name, checkpoint in (("sft", run / "sft" / "checkpoint"), ("sft+grpo", run / "final")):
        folder = out / f"{name.replace('+', '-')}-bundled"
        results, seconds = timed(bundled_eval, f"hf:{checkpoint}", tasks, folder, args.reuse)
        phases[f"{name}, bundled"] = seconds
        rows.append(row(name, "bundled", results, folder, seconds))

    report = {
        "rows": rows,
        "phases": phases,
        "heldout_table": summary["heldout"],
        "reward_trend": summary["reward_trend"],
        "warm_start": summary["warm_start"],
        "memory": summary.get("memory"),
        "bundled_tasks": [t.id for t in tasks],
    }
    (out / "report.json").write_text(json.dumps(report, indent=2))
    print_tables(report)
    return report


def print_tables(report: dict) -> None:
    table = Table(title=f"{MODEL} on 2 CPU cores (one attempt per task, rule judge)")
    for col in (
        "model",
        "tasks",
        "n",
        "solve rate [95% CI]",
        "mean reward",
        "parse-error replies",
        "no-tag replies",
        "mean turns",
        "wall s",
    ):
        table.add_column(col)
    for r in report["rows"]:
        table.add_row(
            r["model"],
            r["tasks"],
            str(r["n"]),
            f"{r['solve_rate']:.2f} [{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]",
            f"{r['mean_reward']:.3f}",
            f"{r['parse_error_share']:.2f}",
            f"{r['no_tag_share']:.2f}",
            f"{r['mean_turns']:.1f}",
            f"{r['seconds']:.0f}",
        )
    console().print(table)
    for line in report["heldout_table"]:
        console().print(line)
    console().print({k: round(v, 1) for k, v in report["phases"].items()})


if __name__ == "__main__":
    main()
