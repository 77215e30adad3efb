"""Judge evaluation: labelled cases, the comparison runner, metrics and the report.

`load_cases(dir)`, `run_comparison(judges, cases, attempts)`, `summarize(results)`,
`write_report(results, out_dir)`; `UPSTREAM_CASES` and `OUR_CASES` locate the two suites.
"""

from pathlib import Path

from tbrl_lib.judge_eval.cases import CaseFormatError, CaseSet, JudgeCase, load_cases
from tbrl_lib.judge_eval.metrics import per_case, spearman, summarize
from tbrl_lib.judge_eval.runner import run_comparison, write_report

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_CASES = REPO.parent / "shared" / "upstream" / "judge_cases"
OUR_CASES = REPO / "data" / "judge_cases"

__all__ = [
           "OUR_CASES",
           "UPSTREAM_CASES",
           "CaseFormatError",
           "CaseSet",
           "JudgeCase",
           "load_cases",
           "per_case",
           "run_comparison",
           "spearman",
           "summarize",
           "write_report",
]
