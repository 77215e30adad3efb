"""Validation of synthesized tasks at scale, on top of `tbrl_lib.evaluate.validate`.

One validator for everything (bundled, generated, LLM-written tasks): this module only
adds what synthesis needs around it: a per-task async validator for the LLM pipeline (which
takes it as an argument: synthesis sits below the agent and evaluation), a batch run that
streams results to JSONL and times itself, tables by family, and the export of a generated
set in every format with the agent's first prompts (`export_tasks`).

    python -m tbrl_lib.evaluate.batch_validate --n 200 --concurrency 4 --out outputs/synth-validate

Left out: the checks themselves (see `tbrl_lib.evaluate.validate`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.aio import run_sync
from tbrl_lib.evaluate.validate import (
    ValidationConfig,
    ValidationResult,
    validate_task,
    validate_tasks_async,
)
from tbrl_lib.synth.generate import generate
from tbrl_lib.synth.llm import AnthropicLLM
from tbrl_lib.synth.pipeline import PipelineConfig, run_pipeline
from tbrl_lib.synth.report import export_all
from tbrl_lib.tasks.model import Task
from tbrl_lib.workspace import workspace_path


def task_validator(concurrency: int = 2, config: ValidationConfig | None = None):
    """An async `(task) -> ValidationResult` for the pipeline, at most `concurrency` at once."""
    gate = asyncio.Semaphore(concurrency)
    config = config or ValidationConfig(run_id="synth-pipeline")

    async def validate(task: Task) -> ValidationResult:
        async with gate:
            return await validate_task(task, config)

    return validate


def export_tasks(tasks: list[Task], out_dir: str | Path) -> dict[str, Path]:
    """`tasks` in every format under `out_dir` (`synth.report.export_all`), the parquet rows
    carrying the agent's first prompt of each task; format -> path."""
    return export_all(tasks, out_dir, prompt_fn=initial_messages)


def validate_many(
    tasks: list[Task], concurrency: int = 4, jsonl: str | Path | None = None, progress: bool = True
) -> list[ValidationResult]:
    """`validate_tasks`, also appending each result to `jsonl` as it arrives."""
    if not tasks:
        return []
    sink = open(jsonl, "a") if jsonl else None  # noqa: SIM115 - closed below

    def record(result: ValidationResult) -> None:
        if sink:
            sink.write(json.dumps(result.to_dict()) + "\n")
            sink.flush()

    try:
        config = ValidationConfig(run_id="synth-validate")
        return run_sync(validate_tasks_async(tasks, concurrency, config, progress, record))
    finally:
        if sink:
            sink.close()


def results_frame(results: list[ValidationResult]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": r.task_id,
                "difficulty": r.difficulty,
                "verdict": r.verdict.value,
                "nop": r.nop_score,
                "solution": r.solution_score,
                "stable": r.stable,
                "seconds": round(r.timings.get("total", 0.0), 1),
                "reasons": "; ".join(r.reasons)[:200],
            }
            for r in results
        ],
        columns=["id", "difficulty", "verdict", "nop", "solution", "stable", "seconds", "reasons"],
    )


def summary_table(results: list[ValidationResult], tasks: list[Task]) -> pd.DataFrame:
    """Per family: tasks, passed, failed, errors, mean no-op score, median seconds."""
    family = {t.id: t.metadata.get("synth", {}).get("family", "llm") for t in tasks}
    frame = results_frame(results)
    frame["family"] = frame["id"].map(family)
    table = frame.groupby("family").agg(
        tasks=("id", "size"),
        passed=("verdict", lambda v: int((v == "pass").sum())),
        failed=("verdict", lambda v: int((v == "fail").sum())),
        errors=("verdict", lambda v: int((v == "error").sum())),
        mean_nop=("nop", "mean"),
        median_s=("seconds", "median"),
    )
    table.loc["total"] = [
        len(frame),
        int((frame["verdict"] == "pass").sum()),
        int((frame["verdict"] == "fail").sum()),
        int((frame["verdict"] == "error").sum()),
        frame["nop"].mean(),
        frame["seconds"].median(),
    ]
    return table.round(3)


def run_llm_pipeline(
    out_dir: str | Path,
    n: int,
    model: str,
    budget_usd: float,
    concurrency: int = 2,
    existing: list[Task] | None = None,
    categories: list[str] | None = None,
) -> dict[str, Any]:
    """The LLM pipeline with Anthropic, `n` requests spread over categories and difficulties."""
    cats = categories or [
        "system-administration",
        "data-processing",
        "debugging",
        "software-engineering",
        "networking",
        "security",
    ]
    levels = ["easy", "medium", "hard"]
    requests = [(cats[i % len(cats)], levels[(i // len(cats)) % 3]) for i in range(n)]
    config = PipelineConfig(
        out_dir=str(out_dir), requests=requests, concurrency=concurrency, budget_usd=budget_usd
    )
    return run_pipeline(config, AnthropicLLM(model), task_validator(concurrency), existing)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate and validate procedural tasks.")
    parser.add_argument("--family", default="all")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--difficulty", default="mixed")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", default="", help="default: the workspace's outputs/synth-validate")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else workspace_path("outputs", "synth-validate")
    out.mkdir(parents=True, exist_ok=True)
    tasks = generate(args.family, args.n, args.seed, args.difficulty)
    started = time.perf_counter()
    results = validate_many(tasks, args.concurrency, jsonl=out / "results.jsonl")
    seconds = time.perf_counter() - started
    table = summary_table(results, tasks)
    (out / "summary.md").write_text(table.to_markdown())
    summary = {
        "tasks": len(tasks),
        "passed": sum(r.ok for r in results),
        "wall_seconds": round(seconds, 1),
        "concurrency": args.concurrency,
        "seed": args.seed,
        "family": args.family,
        "difficulty": args.difficulty,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(table.to_string())
    print(json.dumps(summary))
    return 0 if summary["passed"] == len(tasks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
