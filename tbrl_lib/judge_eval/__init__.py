"""Judge evaluation: labelled cases, the comparison runner, metrics and the report.

`load_cases(dir)`, `run_comparison(judges, cases, attempts)`, `summarize(results)`,
`write_report(results, out_dir, cases=cases)`, `relative_label_table(cases, per_case(results))`
(the `at_most` labels per judge); `suite_dirs(spec)` locates the suites (`our_cases()`, and the
upstream six only where `tbrl_lib.upstream` finds them); for notebook 03, `calibrate` and
`calibration_lines` (the rule judge's thresholds fit and cross-validated), `available_judges`
and `headline_lines`.
"""

from tbrl_lib.judge_eval.calibration import calibrate, calibration_lines
from tbrl_lib.judge_eval.cases import (
    CaseFormatError,
    CaseSet,
    JudgeCase,
    load_cases,
    our_cases,
    suite_dirs,
)
from tbrl_lib.judge_eval.metrics import per_case, spearman, summarize
from tbrl_lib.judge_eval.notebook import available_judges, headline_lines
from tbrl_lib.judge_eval.runner import relative_label_table, run_comparison, write_report

__all__ = [
    "CaseFormatError",
    "CaseSet",
    "JudgeCase",
    "available_judges",
    "calibrate",
    "calibration_lines",
    "headline_lines",
    "load_cases",
    "our_cases",
    "per_case",
    "relative_label_table",
    "run_comparison",
    "spearman",
    "suite_dirs",
    "summarize",
    "write_report",
]
