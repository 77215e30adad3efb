"""`tbrl judge eval|calibrate|score|check-config`: evaluate judges on labelled cases, calibrate
the rule judge, score one trajectory, check a config (thin over `tbrl_lib.judge_eval` and
`tbrl_lib.rewards.judges`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tbrl_lib.aio import run_sync
from tbrl_lib.judge_eval import load_cases, run_comparison, suite_dirs, summarize, write_report
from tbrl_lib.judge_eval.calibration import (
    calibrate,
    calibration_lines,
    write_calibration_report,
)
from tbrl_lib.rewards.judges import (
    JudgeConfig,
    JudgeInput,
    RuleBasedJudge,
    make_judge,
    require_available,
)

app = typer.Typer(no_args_is_help=True)

SuitesOpt = Annotated[
    str,
    typer.Option(
        help="Case suites: auto (ours, plus the upstream six when present), or a comma list "
        "of ours, upstream (each must exist)."
    ),
]
CasesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        help="Judge-case directories (cases.yaml + one dir per case); given, they replace --suites."
    ),
]


@app.command("eval")
def eval_judges(
    judges: str = typer.Option(
        "rule",
        help="Comma-separated judge specs, each judged separately "
        "(rule, rule-nocaps, anthropic:MODEL, openai:MODEL, claude-cli, config:PATH).",
    ),
    suites: SuitesOpt = "auto",
    cases: CasesOpt = None,
    attempts: int = typer.Option(1, min=1, help="Attempts per case per judge."),
    concurrency: int = typer.Option(4, min=1, help="Judge calls in flight at once."),
    out: Path = typer.Option(
        ..., help="Output folder for results.csv/.parquet, summary.csv, report.md."
    ),
    base_url: str = typer.Option(
        None, help="Base URL for the API judges (vLLM, OpenRouter, loopback)."
    ),
) -> None:
    """Score labelled cases with each judge; write the results and the rendered report (with
    the rule judge's in-sample and cross-validated figures when it is among the judges).
    A judge whose API key is absent is refused before any case runs."""
    options = {"base_url": base_url} if base_url else {}
    built = [
        make_judge(s, **(options if ":" in s and not s.startswith("config:") else {}))
        for s in judges.split(",")
        if s.strip()
    ]
    require_available(built)
    dirs = {d.name: d for d in cases} if cases else suite_dirs(suites, note=_note)
    loaded = [c for name, d in dirs.items() for c in load_cases(d, suite=name).cases]
    results = run_comparison(built, loaded, attempts=attempts, concurrency=concurrency)
    rule = any(isinstance(judge, RuleBasedJudge) for judge in built) and len(loaded) >= 3
    appendix = calibration_lines(calibrate(loaded)) if rule else []
    paths = write_report(
        results,
        out,
        title=f"Judge comparison on {', '.join(dirs)}",
        appendix=appendix,
        cases=loaded,
    )
    columns = [
        "rank",
        "judge",
        "pass_rate",
        "pass_ci_low",
        "pass_ci_high",
        "spearman",
        "mean_distance",
        "cost_usd",
    ]
    typer.echo(summarize(results)[columns].to_string(index=False))
    typer.echo(f"report: {paths['report']}")


def _note(line: str) -> None:
    typer.echo(line, err=True)


@app.command("calibrate")
def calibrate_rule_judge(
    suites: SuitesOpt = "auto",
    cases: CasesOpt = None,
    out: Path = typer.Option(..., help="Output folder for calibration.md and per_case.csv."),
) -> None:
    """Fit the rule judge's thresholds on labelled cases and report pass rate and Spearman
    in-sample, leave-one-out and leave-one-suite-out."""
    dirs = {d.name: d for d in cases} if cases else suite_dirs(suites, note=_note)
    loaded = [c for name, d in dirs.items() for c in load_cases(d, suite=name).cases]
    cal = calibrate(loaded)
    paths = write_calibration_report(cal, out)
    overall = cal.summary[cal.summary["suite"] == "all"]
    typer.echo(
        overall[["scheme", "cases", "in_range", "pass_rate", "spearman"]].to_string(index=False)
    )
    typer.echo(f"report: {paths['report']}")


@app.command("score")
def score_one(
    messages: Path = typer.Argument(..., help="messages.json of a trajectory (OpenAI-style chat)."),
    dockerfile: Path = typer.Option(None, help="The task's Dockerfile (environment description)."),
    judge: str = typer.Option(
        "rule", help="Judge spec; a comma-separated list is a fallback chain."
    ),
) -> None:
    """Score one trajectory and print the judge's result as JSON (a judge whose API key is
    absent is refused first)."""
    built = make_judge(judge)
    require_available(built)
    item = JudgeInput.from_messages(
        json.loads(messages.read_text()), environment=dockerfile.read_text() if dockerfile else ""
    )
    result = run_sync(built.score(item))
    typer.echo(
        json.dumps(
            result.to_dict() if hasattr(result, "to_dict") else vars(result), indent=2, default=str
        )
    )


@app.command("check-config")
def check_config(path: Path = typer.Argument(..., help="Judge config YAML.")) -> None:
    """Validate a judge config file and print the chain it builds."""
    chain = JudgeConfig.load(path).build()
    typer.echo(
        f"ok: {chain.name} (prompt {chain.prompt_version}, concurrency {chain.max_concurrency})"
    )
