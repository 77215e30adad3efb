"""The comparison runner and `tbrl judge eval`: attempts, failures kept as missing, report files."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from tbrl_lib.cli import app
from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
from tbrl_lib.judge_eval import (
    load_cases,
    our_cases,
    run_comparison,
    summarize,
    write_report,
)


def test_rule_judge_on_the_upstream_cases(upstream_judge_cases):
    cases = load_cases(upstream_judge_cases).cases
    results = run_comparison(["rule"], cases, attempts=2, progress=False)
    assert len(results) == 12 and results["score"].notna().all()
    row = summarize(results).iloc[0]
    # in-sample: the thresholds are fitted on these six and ours (cross-validated figures:
    # tests/judge_eval/test_calibration.py)
    assert row["pass_rate"] >= 5 / 6 and row["spearman"] > 0.7 and row["spread"] == 0


def test_api_judge_failures_are_missing_scores_not_zeros(tmp_path):
    cases = load_cases(our_cases()).cases[:2]
    with LLMServer([Reply(json={"score": 0.5}), Reply.server_error()]) as server:
        from tbrl_lib.rewards.judges import make_judge

        judge = make_judge(
            "anthropic:claude-haiku-4-5", base_url=server.base_url, api_key="t", max_retries=0
        )
        results = run_comparison([judge], cases, attempts=1, concurrency=1, progress=False)
    assert results["score"].isna().sum() == 1 and (results["error"] != "").sum() == 1
    paths = write_report(results, tmp_path)
    assert "Failed calls" in paths["report"].read_text()
    assert len(pd.read_parquet(paths["results_parquet"])) == 2


def test_cli_judge_eval_writes_results_and_report(tmp_path):
    out = tmp_path / "eval"
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "eval",
            "--judges",
            "rule,rule-nocaps",
            "--cases",
            str(our_cases()),
            "--attempts",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    for name in (
        "results.csv",
        "results.parquet",
        "summary.csv",
        "per_case.csv",
        "report.md",
        "scores_vs_ranges.png",
    ):
        assert (out / name).exists(), name
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["judge"]) == ["rule", "rule-nocaps"] and summary.loc[0, "pass_rate"] > 0.8
    assert "rule" in result.output


def test_cli_check_config(tmp_path, tbrl):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("judges:\n  - {spec: rule}\n")
    bad.write_text("judges:\n  - {spec: rule, colour: blue}\n")
    assert tbrl("judge", "check-config", good).code == 0
    result = tbrl("judge", "check-config", bad)
    assert result.code == 1 and "colour" in result.err and len(result.err.splitlines()) == 1


def test_pass_rates_carry_wilson_intervals():
    results = run_comparison(["rule"], load_cases(our_cases()).cases, attempts=1, progress=False)
    row = summarize(results).iloc[0]
    assert row["cases"] >= 12 and row["passed"] == round(row["pass_rate"] * row["cases"])
    # cases are the unit: a dozen cases leave a wide interval around the rate, never zero-width
    assert row["pass_ci_low"] < row["pass_rate"] <= row["pass_ci_high"] <= 1.0
    assert row["pass_ci_high"] - row["pass_ci_low"] > 0.15


@pytest.fixture
def no_judge_keys(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY"),
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
    ],
)
def test_judge_eval_refuses_a_judge_without_its_key_before_any_case(
    no_judge_keys, tbrl, tmp_path, spec, variable
):
    result = tbrl("judge", "eval", "--judges", f"rule,{spec}", "--out", tmp_path / "out")
    assert result.code == 1 and len(result.err.strip().splitlines()) == 1
    assert spec in result.err and variable in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_judge_score_refuses_a_judge_without_its_key(no_judge_keys, tbrl):
    case = our_cases() / "hand_late_plan" / "messages.json"
    result = tbrl("judge", "score", case, "--judge", "anthropic:claude-sonnet-4-6")
    assert result.code == 1 and "ANTHROPIC_API_KEY" in result.err and result.out == ""
    assert len(result.err.strip().splitlines()) == 1


def test_openai_judge_on_a_local_endpoint_needs_no_key(no_judge_keys, tbrl, tmp_path):
    with LLMServer(default=Reply(json={"score": 0.5})) as server:
        result = tbrl(
            "judge",
            "eval",
            "--judges",
            "openai:local-model",
            "--cases",
            our_cases(),
            "--base-url",
            server.openai_base_url,
            "--out",
            tmp_path / "out",
        )
    assert result.code == 0, result.err
    assert (tmp_path / "out" / "summary.csv").exists()


def test_the_report_checks_the_claims_cases_for_rule_and_llm_judges(tmp_path):
    """An LLM judge (the real OpenAI SDK against the loopback server) reads the prompt that
    says claims count for nothing; the report lists the relative label for it and for the
    rule judge. The loopback "model" answers 0.6 everywhere, as a judge that pays for claims
    would on theatre: the label fails for it and holds for the rule judge."""
    from tbrl_lib.rewards.judges import make_judge

    cases = [c for c in load_cases(our_cases()).cases if "claims" in c.rubric]
    assert {c.id for c in cases} == {
        "ep_todo_theatre",
        "ep_echoed_verification",
        "ep_short_genuine",
    }
    answer = {k: 0.6 for k in ("planning", "exploration", "tool_use", "verification", "efficiency")}
    with LLMServer(
        default=Reply(json={**answer, "caps": [], "reasoning": "x", "score": 0.6})
    ) as server:
        llm = make_judge("openai:gpt-4o-mini", base_url=server.openai_base_url, api_key="t")
        results = run_comparison(["rule", llm], cases, attempts=1, progress=False)
        prompts = [json.dumps(r.body) for r in server.requests]
    assert len(prompts) == 3 and all("Evidence, not claims" in p for p in prompts)
    report = write_report(results, tmp_path, cases=cases)["report"].read_text()
    section = report.split("## Relative labels", 1)[1]
    rows = [line for line in section.splitlines() if "ep_todo_theatre" in line]
    assert len(rows) == 2, section
    assert any(r.startswith("| rule |") and r.endswith("| True |") for r in rows), rows
    assert any(r.startswith("| openai:") and r.endswith("| False |") for r in rows), rows
