"""Statistics for benchmark runs: pass@k, accuracy intervals, paired comparisons.

The unit of resampling is the *task*, never the trial: attempts of one task are
correlated (same environment, same tests), so a bootstrap over trials would report
intervals that are too narrow. Every function here takes plain numbers, so the same
code serves the harness, the notebook and the tests.

- `pass_at_k(n, c, k)`: the unbiased estimator of Chen et al. (2021, "Evaluating Large
  Language Models Trained on Code"): 1 - C(n-c, k) / C(n, k), the chance that at least one
  of k attempts drawn without replacement from n (c of them correct) is correct.
- `wilson_interval`: score interval for a binomial proportion, always reported: tasks are
  the unit (with several attempts, the successes are the sum of per-task rates), and it
  never collapses to zero width on a handful of tasks.
- `bootstrap_mean_interval`: percentile bootstrap of the mean of per-task values; reported
  beside Wilson when tasks have several attempts, never alone (on 3 tasks that all pass it
  is [1, 1]).
- `paired_comparison`: two runs on the same tasks; the mean per-task difference with a
  paired bootstrap interval, wins/losses/ties and an exact two-sided sign-test p-value.
- `breakdown`: accuracy per group (difficulty, category, ...).

Left out: multiple-comparison corrections and Bayesian intervals; a run compares two
policies at a time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with `n` attempts of which `c` succeeded.

    Computed as 1 - prod_{i=n-c+1..n} (1 - k/i), which equals 1 - C(n-c,k)/C(n,k)
    without forming large binomials.
    """
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 1 <= k <= n (attempts), got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float:
    """Mean over tasks of `pass_at_k(n, c, k)`; `counts` holds one (n, c) per task."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    if not values:
        raise ValueError("mean_pass_at_k needs at least one task")
    return float(np.mean(values))


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(
    successes: float, n: int, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float]:
    """Wilson score interval for `successes` out of `n` Bernoulli trials."""
    if n <= 0:
        raise ValueError("wilson_interval needs n >= 1")
    if not 0 <= successes <= n:
        raise ValueError(f"wilson_interval needs 0 <= successes <= n, got {successes}/{n}")
    z = _z(confidence)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - margin), min(1.0, center + margin)


def bootstrap_mean_interval(
    values: Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (one value per task).

    Seeded, so the same values always give the same interval (a resumed run reports
    exactly what an uninterrupted one does).
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("bootstrap_mean_interval needs at least one value")
    _z(confidence)  # validates confidence
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))
    means = data[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


@dataclass(frozen=True)
class Comparison:
    """Run A minus run B on the tasks both ran (per-task success rates)."""

    n_tasks: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci_low: float
    ci_high: float
    a_better: int
    b_better: int
    ties: int
    sign_test_p: float
    only_in_a: list[str]
    only_in_b: list[str]
    confidence: float = DEFAULT_CONFIDENCE

    def as_dict(self) -> dict:
        return asdict(self)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test (ties dropped): P(as extreme | wins ~ Bin(n, 1/2))."""
    n = wins + losses
    if n == 0:
        return 1.0
    extreme = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(extreme + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_comparison(
    rates_a: Mapping[str, float],
    rates_b: Mapping[str, float],
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare two runs task by task; the interval comes from resampling shared tasks."""
    shared = sorted(set(rates_a) & set(rates_b))
    if not shared:
        raise ValueError(
            "the two runs share no task ids, so they cannot be compared; "
            "check that both were run on the same task source"
        )
    a = np.array([rates_a[t] for t in shared], dtype=float)
    b = np.array([rates_b[t] for t in shared], dtype=float)
    diff = a - b
    low, high = bootstrap_mean_interval(diff, confidence, resamples, seed)
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    return Comparison(
        n_tasks=len(shared),
        accuracy_a=float(a.mean()),
        accuracy_b=float(b.mean()),
        difference=float(diff.mean()),
        ci_low=low,
        ci_high=high,
        a_better=wins,
        b_better=losses,
        ties=len(shared) - wins - losses,
        sign_test_p=sign_test_p(wins, losses),
        only_in_a=sorted(set(rates_a) - set(rates_b)),
        only_in_b=sorted(set(rates_b) - set(rates_a)),
        confidence=confidence,
    )


def breakdown(rates: Mapping[str, float], groups: Mapping[str, str]) -> dict[str, dict]:
    """Per-group accuracy: {group: {"n_tasks", "accuracy", "resolved_tasks"}}.

    `rates` maps task id -> success rate; `groups` maps task id -> group name. A task
    missing from `groups` is reported under "unknown" rather than dropped.
    """
    members: dict[str, list[float]] = defaultdict(list)
    for task_id, rate in rates.items():
        members[groups.get(task_id, "unknown")].append(rate)
    return {
        group: {
            "n_tasks": len(vals),
            "accuracy": float(np.mean(vals)),
            "resolved_tasks": float(np.sum(vals)),
        }
        for group, vals in sorted(members.items())
    }
