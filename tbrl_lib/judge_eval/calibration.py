"""Fit the rule judge's thresholds on labelled cases, and measure how well the fit carries over
to cases it never saw.

    cal = calibrate(cases)                  # cases from every suite, labels fixed beforehand
    write_calibration_report(cal, out_dir)  # calibration.md, per_case.csv
    tbrl judge calibrate --out DIR          # the same from the command line

`fit` searches `RuleParams` one threshold at a time over `GRID` (coordinate ascent from the
hand-set priors `RuleParams()`, a few passes) for the most cases in range, then the best rank correlation with the
range centres, then the smallest distance to the ranges; ties keep the earlier value, so
the fit stays near the priors when the data do not ask otherwise. Every fit starts from the
priors, never from the shipped `DEFAULT_PARAMS` (a fit that saw every case), so nothing of a
held-out case leaks in through the starting point. `calibrate` reports:

- in-sample: fit on every case, score every case (what tuning can reach, not a promise);
- leave-one-out: each case scored by the fit on all the *other* cases, from every suite;
- leave-one-suite-out: each suite scored by the fit on the other suites only.

Pass rate is the share of cases scored inside their expected range, Spearman the rank
correlation of scores with range centres; relative labels (`at_most`: todo theatre at most
half of a short genuine run) are checked under every scheme and count in the fit's objective
like a case in range. Left out: the judge's feature design was made
while reading the cases, which no split of the labels can undo; new labelled cases are the
only clean test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from tbrl_lib.judge_eval.cases import JudgeCase, relative_labels
from tbrl_lib.judge_eval.metrics import EPS, distance_to_range, spearman
from tbrl_lib.judge_eval.runner import markdown_table
from tbrl_lib.rewards.judges.facts import ReplyFact, trajectory_facts
from tbrl_lib.rewards.judges.rule_based import (
    DEFAULT_PARAMS,
    RuleParams,
    features_from_facts,
    score_features,
)

GRID: dict[str, tuple[float, ...]] = {
    "reads_for_exploration": (1, 2, 3),
    "late_plan_credit": (0.4, 0.5, 0.6),
    "upkeep_share": (0.0, 0.25, 0.5, 0.75),
    "failure_tolerance": (0.1, 0.2, 0.3, 0.4),
    "flail_repeats": (1, 2, 3),
    "think_chars_per_reply": (1500, 2000, 3000, 4000),
    "idle_think_chars": (1000, 1500, 3000),
    "unfinished_penalty": (0.0, 0.1, 0.2, 0.3),
    "stacked_cap_step": (0.0, 0.05, 0.1),
}
"""The values `fit` tries for each threshold. `evidence_actions` is not fitted: it is set by
what a genuine process needs (see `RuleParams`), and only todo theatre would inform it."""
MAX_PASSES = 4


@dataclass
class Calibration:
    """What `calibrate` measured; `summary` has one row per evaluation scheme."""

    params: RuleParams
    per_case: pd.DataFrame
    summary: pd.DataFrame
    fold_params: dict[str, RuleParams] = field(default_factory=dict)
    relative: pd.DataFrame = field(default_factory=pd.DataFrame)
    """One row per scheme and relative label: both scores and whether the label holds."""


def score_cases(cases: Sequence[JudgeCase], params: RuleParams) -> list[float]:
    """The rule judge's score of each case under `params`."""
    return [score_features(features_from_facts(_facts(c), params), True, params)[0] for c in cases]


_FACTS: dict[int, tuple[list[dict], list[ReplyFact]]] = {}


def _facts(case: JudgeCase) -> list[ReplyFact]:
    """Parsed once per case: the facts do not depend on the thresholds. Keyed by the messages
    list itself (held, so its id cannot be reused by another list)."""
    held = _FACTS.get(id(case.messages))
    if held is None or held[0] is not case.messages:
        held = _FACTS[id(case.messages)] = (case.messages, trajectory_facts(case.messages))
    return held[1]


def objective(scores: Sequence[float], cases: Sequence[JudgeCase]) -> tuple[int, float, float]:
    """(cases in range + relative labels held, Spearman vs centres, minus mean distance):
    larger is better."""
    inside = sum(_in_range(s, c) for s, c in zip(scores, cases))
    by_id = {c.id: s for s, c in zip(scores, cases)}
    inside += sum(row["holds"] for row in relative_labels(list(cases), by_id))
    rho = spearman(list(scores), [c.center for c in cases]) if len(cases) > 2 else None
    distance = sum(distance_to_range(s, *c.expected_range) for s, c in zip(scores, cases))
    return inside, round(rho or 0.0, 6), -round(distance / max(1, len(cases)), 6)


PRIORS = RuleParams()
"""Where every fit starts: the thresholds as set by hand, before any case was scored."""


def fit(cases: Sequence[JudgeCase], start: RuleParams = PRIORS) -> RuleParams:
    """Coordinate ascent over `GRID` (see the module docstring)."""
    best, best_value = start, objective(score_cases(cases, start), cases)
    for _ in range(MAX_PASSES):
        improved = False
        for name, values in GRID.items():
            for value in values:
                candidate = replace(best, **{name: type(getattr(best, name))(value)})
                candidate_value = objective(score_cases(cases, candidate), cases)
                if candidate_value > best_value:
                    best, best_value, improved = candidate, candidate_value, True
        if not improved:
            break
    return best


def calibrate(cases: Sequence[JudgeCase], start: RuleParams = PRIORS) -> Calibration:
    """In-sample, leave-one-out and leave-one-suite-out scores (see the module docstring)."""
    cases = list(cases)
    if len(cases) < 3:
        raise ValueError(f"calibration needs at least 3 labelled cases, got {len(cases)}")
    params = fit(cases, start)
    rows = [
        {
            "case": c.id,
            "suite": c.suite,
            "lo": c.expected_range[0],
            "hi": c.expected_range[1],
            "center": c.center,
            "priors": s,
        }
        for c, s in zip(cases, score_cases(cases, start))
    ]
    for row, score, shipped in zip(
        rows, score_cases(cases, params), score_cases(cases, DEFAULT_PARAMS)
    ):
        row["in_sample"], row["shipped"] = score, shipped
    folds: dict[str, RuleParams] = {}
    for i, case in enumerate(cases):
        folds[case.id] = fit(cases[:i] + cases[i + 1 :], start)
        rows[i]["leave_one_out"] = score_cases([case], folds[case.id])[0]
    suites = sorted({c.suite for c in cases})
    for suite in suites if len(suites) > 1 else []:
        folds[f"suite:{suite}"] = fit([c for c in cases if c.suite != suite], start)
        held = [i for i, c in enumerate(cases) if c.suite == suite]
        for i, score in zip(held, score_cases([cases[i] for i in held], folds[f"suite:{suite}"])):
            rows[i]["leave_one_suite_out"] = score
    per_case = pd.DataFrame(rows)
    relative = [
        {"scheme": column, **row}
        for column in SCHEMES
        if column in per_case
        for row in relative_labels(cases, dict(zip(per_case["case"], per_case[column])))
    ]
    return Calibration(params, per_case, _summary(per_case), folds, pd.DataFrame(relative))


SCHEMES = {
    "priors": "hand-set priors, before fitting",
    "shipped": "shipped DEFAULT_PARAMS",
    "in_sample": "fit on all cases (in-sample)",
    "leave_one_out": "leave-one-out (cross-validated)",
    "leave_one_suite_out": "leave-one-suite-out (cross-validated)",
}
"""per_case column -> what the scheme is."""


def _summary(per_case: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for column, label in SCHEMES.items():
        if column not in per_case:
            continue
        for suite, group in [("all", per_case), *per_case.groupby("suite", sort=True)]:
            inside = [
                _inside(s, lo, hi) for s, lo, hi in zip(group[column], group["lo"], group["hi"])
            ]
            rho = spearman(list(group[column]), list(group["center"])) if len(group) > 2 else None
            rows.append(
                {
                    "scheme": label,
                    "suite": suite,
                    "cases": len(group),
                    "in_range": sum(inside),
                    "pass_rate": sum(inside) / len(group),
                    "spearman": rho,
                }
            )
    return pd.DataFrame(rows)


def calibration_lines(cal: Calibration) -> list[str]:
    """The report section: what pass rate and Spearman mean, the summary, the fit."""
    changed = {k: v for k, v in asdict(cal.params).items() if v != getattr(DEFAULT_PARAMS, k)}
    stale = (
        f"differs from the shipped DEFAULT_PARAMS in `{changed}`"
        if changed
        else "equals the shipped DEFAULT_PARAMS"
    )
    return [
        "## Rule judge: in-sample and cross-validated",
        "",
        (
            "Pass rate: share of cases scored inside their expected range; Spearman: rank "
            "correlation of scores with the range centres. In-sample rows score cases the "
            "thresholds were fitted on; cross-validated rows score each case with thresholds "
            "fitted without it (leave-one-out) or without its whole suite."
        ),
        "",
        markdown_table(cal.summary),
        "",
        f"Fitted thresholds (all cases): `{asdict(cal.params)}`; the fit {stale}.",
        "",
        *(
            [
                "Relative labels (a case scored at most a ratio of another's score), per scheme:",
                "",
                markdown_table(cal.relative.assign(scheme=cal.relative["scheme"].map(SCHEMES))),
                "",
            ]
            if len(cal.relative)
            else []
        ),
    ]


def write_calibration_report(cal: Calibration, out_dir: str | Path) -> dict[str, Path]:
    """calibration.md (the section above and every case) and per_case.csv in `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"report": out / "calibration.md", "per_case": out / "per_case.csv"}
    cal.per_case.to_csv(paths["per_case"], index=False)
    lines = [
        "# Rule judge calibration",
        "",
        *calibration_lines(cal),
        "## Per case",
        "",
        markdown_table(cal.per_case),
        "",
    ]
    paths["report"].write_text("\n".join(lines))
    return paths


def _in_range(score: float, case: JudgeCase) -> bool:
    return _inside(score, *case.expected_range)


def _inside(score: float, lo: float, hi: float) -> bool:
    return lo - EPS <= score <= hi + EPS
