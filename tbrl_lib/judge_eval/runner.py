"""Run judges over labelled cases: N attempts per case per judge, concurrently, with progress.

    results = run_comparison(["rule", "anthropic:claude-sonnet-4-20250514"], cases, attempts=3)
    write_report(results, out_dir)      # results.csv/.parquet, per_case.csv, summary.csv, report.md, plot

`write_report(..., appendix=calibration_lines(cal))` adds the rule judge's in-sample and
cross-validated figures (`tbrl_lib.judge_eval.calibration`; `tbrl judge eval` does this
whenever a rule judge is among the judges); given the `cases`, it checks their relative labels
(`at_most`: todo theatre at most half of a short genuine run) for every judge, the LLM
judges included.

Judges are called directly (no cache, no fallback), so attempts are independent and a failing
judge shows up as missing scores (`error` column) instead of being replaced by another judge.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from tbrl_lib.aio import run_sync
from tbrl_lib.judge_eval.cases import JudgeCase, relative_labels
from tbrl_lib.judge_eval.metrics import per_case, summarize
from tbrl_lib.rewards.judges import JudgeError, make_judge, require_available

COLUMNS = [
    "judge",
    "case",
    "suite",
    "attempt",
    "score",
    "lo",
    "hi",
    "error",
    "latency_s",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "prompt_version",
]


def run_comparison(
    judges: Sequence[Any],
    cases: Sequence[JudgeCase],
    attempts: int = 1,
    concurrency: int = 4,
    progress: bool = True,
) -> pd.DataFrame:
    """Score every case `attempts` times with every judge (spec strings or `Judge`s).
    A judge that cannot run here (no API key) is refused before any case is scored."""
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    built = [make_judge(j) if isinstance(j, str) else j for j in judges]
    require_available(built)
    return run_sync(_run(built, list(cases), attempts, concurrency, progress))


async def _run(judges, cases, attempts, concurrency, progress) -> pd.DataFrame:
    semaphore = asyncio.Semaphore(concurrency)
    jobs = [(j, c, a) for j in judges for c in cases for a in range(attempts)]
    bar = tqdm(total=len(jobs), desc="judging", disable=not progress)

    async def one(judge, case: JudgeCase, attempt: int) -> dict:
        row = {
            "judge": judge.name,
            "case": case.id,
            "suite": case.suite,
            "attempt": attempt,
            "score": None,
            "lo": case.expected_range[0],
            "hi": case.expected_range[1],
            "error": "",
            "latency_s": 0.0,
            "cost_usd": 0.0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "prompt_version": getattr(judge, "prompt_version", ""),
        }
        async with semaphore:
            t0 = time.perf_counter()
            try:
                result = await judge.score(case.judge_input())
            except JudgeError as err:
                row.update(error=str(err)[:500], latency_s=time.perf_counter() - t0)
            else:
                row.update(
                    score=result.score,
                    latency_s=result.latency_s,
                    cost_usd=result.usage.cost_usd,
                    input_tokens=result.usage.input_tokens,
                    output_tokens=result.usage.output_tokens,
                    cache_read_tokens=result.usage.cache_read_tokens,
                    prompt_version=result.prompt_version,
                )
        bar.update(1)
        return row

    try:
        rows = await asyncio.gather(*(one(j, c, a) for j, c, a in jobs))
    finally:
        bar.close()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["score"] = frame["score"].astype(float)
    return frame


def write_report(
    results: pd.DataFrame,
    out_dir: str | Path,
    title: str = "Judge comparison",
    appendix: Sequence[str] = (),
    cases: Sequence[JudgeCase] = (),
) -> dict[str, Path]:
    """Write the result tables, a markdown report and a score-vs-range plot into `out_dir`;
    `cases` adds the relative labels per judge, `appendix` (markdown lines) ends the report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scores, summary = per_case(results), summarize(results)
    paths = {
        "results_csv": out / "results.csv",
        "results_parquet": out / "results.parquet",
        "per_case": out / "per_case.csv",
        "summary": out / "summary.csv",
        "report": out / "report.md",
        "plot": out / "scores_vs_ranges.png",
    }
    results.to_csv(paths["results_csv"], index=False)
    results.to_parquet(paths["results_parquet"], index=False)
    scores.to_csv(paths["per_case"], index=False)
    summary.to_csv(paths["summary"], index=False)
    plot_scores(scores, paths["plot"])
    lines = [
        f"# {title}",
        "",
        f"{results['case'].nunique()} cases, {results['judge'].nunique()} judges, "
        f"{int(results.groupby(['judge', 'case']).size().max())} attempt(s) per case.",
        "",
        "## Ranking",
        "",
        markdown_table(summary),
        "",
        "## Per case (mean score over attempts)",
        "",
        markdown_table(
            scores.pivot(index="case", columns="judge", values="mean_score").reset_index()
        ),
        "",
        f"![scores vs expected ranges]({paths['plot'].name})",
        "",
    ]
    relative = relative_label_table(cases, scores)
    if len(relative):
        lines += [
            "## Relative labels",
            "",
            "A case scored at most a ratio of another case's score (mean over attempts), "
            "per judge:",
            "",
            markdown_table(relative),
            "",
        ]
    errors = results[results["error"] != ""]
    if len(errors):
        lines += [
            "## Failed calls",
            "",
            markdown_table(errors[["judge", "case", "attempt", "error"]]),
            "",
        ]
    lines += list(appendix)
    paths["report"].write_text("\n".join(lines))
    return paths


def relative_label_table(cases: Sequence[JudgeCase], per_case_scores: pd.DataFrame) -> pd.DataFrame:
    """Each judge's check of the cases' `at_most` labels (`per_case_scores`: `per_case`)."""
    rows = [
        {"judge": judge, **row}
        for judge, group in per_case_scores.groupby("judge", sort=False)
        for row in relative_labels(list(cases), dict(zip(group["case"], group["mean_score"])))
    ]
    return pd.DataFrame(rows)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub markdown table (numbers to 3 decimals) without extra dependencies."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "" if pd.isna(value) else f"{value:.3f}"
        return str(value).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def plot_scores(cases: pd.DataFrame, path: str | Path) -> Path:
    """Each case's expected range (grey bar) and every judge's mean score (dots)."""
    import matplotlib  # the notebooks extra: imported where a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = cases.drop_duplicates("case").sort_values("center")["case"].tolist()
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(order) + 1.5))
    for y, case in enumerate(order):
        row = cases[cases["case"] == case].iloc[0]
        ax.plot([row["lo"], row["hi"]], [y, y], color="0.8", linewidth=8, solid_capstyle="butt")
    for judge, group in cases.groupby("judge", sort=False):
        ys = [order.index(c) for c in group["case"]]
        ax.scatter(group["mean_score"], ys, label=judge, zorder=3, s=25)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("score (grey: expected range)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
