"""Judge-comparison metrics, per judge over a set of labelled cases.

- `pass_rate`: share of cases whose *mean* score over attempts lies inside the expected range,
  with its 95% Wilson interval (`pass_ci_low`, `pass_ci_high`; cases are the unit, so six
  cases give a wide interval, as they should);
- `mean_score`; `spread`: mean over cases of the standard deviation across attempts;
- `mean_distance`: mean distance of a case's mean score to its range (0 inside it);
- `spearman`: rank correlation of case mean scores with the range centres (ties get average
  ranks; NaN-free: None when either side is constant);
- `missing_rate`, `cost_usd` (sum), `latency_s` (mean per call).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from tbrl_lib.evaluate.stats import wilson_interval

EPS = 1e-9
"""Means of scores are float sums: 0.2 and 0.4 average to 0.30000000000000004, still "in 0.3"."""


def average_ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson correlation of average ranks); None if undefined."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs equal lengths, got {len(x)} and {len(y)}")
    if len(x) < 2:
        return None
    rx, ry = average_ranks(list(x)), average_ranks(list(y))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def distance_to_range(score: float, lo: float, hi: float) -> float:
    return 0.0 if lo - EPS <= score <= hi + EPS else min(abs(score - lo), abs(score - hi))


def per_case(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (judge, case): mean/std of scores over attempts, in-range, distance."""
    scored = results[results["score"].notna()]
    grouped = scored.groupby(["judge", "case"], sort=False)
    table = grouped.agg(
        mean_score=("score", "mean"),
        spread=("score", "std"),
        attempts=("score", "size"),
        lo=("lo", "first"),
        hi=("hi", "first"),
    ).reset_index()
    table["spread"] = table["spread"].fillna(0.0)
    table["in_range"] = (table["mean_score"] >= table["lo"] - EPS) & (
        table["mean_score"] <= table["hi"] + EPS
    )
    table["distance"] = [
        distance_to_range(s, lo, hi)
        for s, lo, hi in zip(table["mean_score"], table["lo"], table["hi"])
    ]
    table["center"] = (table["lo"] + table["hi"]) / 2
    return table


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per judge, ranked by pass rate then Spearman."""
    cases = per_case(results)
    rows = []
    for judge, group in results.groupby("judge", sort=False):
        mine = cases[cases["judge"] == judge]
        rho = spearman(list(mine["mean_score"]), list(mine["center"])) if len(mine) else None
        n_cases = group["case"].nunique()
        passed = int(mine["in_range"].sum())
        low, high = wilson_interval(passed, n_cases) if n_cases else (None, None)
        rows.append(
            {
                "judge": judge,
                "cases": n_cases,
                "calls": len(group),
                "passed": passed,
                "pass_rate": passed / n_cases if n_cases else 0.0,
                "pass_ci_low": low,
                "pass_ci_high": high,
                "mean_score": float(mine["mean_score"].mean()) if len(mine) else None,
                "spread": float(mine["spread"].mean()) if len(mine) else None,
                "mean_distance": float(mine["distance"].mean()) if len(mine) else None,
                "spearman": rho,
                "missing_rate": float(group["score"].isna().mean()),
                "cost_usd": float(group["cost_usd"].sum()),
                "latency_s": float(group["latency_s"].mean()),
            }
        )
    table = pd.DataFrame(rows)
    if len(table):
        table["_rho"] = table["spearman"].fillna(-2.0)
        table = table.sort_values(["pass_rate", "_rho"], ascending=False).drop(columns="_rho")
        table.insert(0, "rank", range(1, len(table) + 1))
    return table.reset_index(drop=True)
