"""The per-family held-out panel (`families.png`): a run that trains on several procedural
families shows, per family and pooled, the solve rate of each evaluated model (base, warm
start, final) side by side, with Wilson 95% intervals and the final model's paired difference
against the warm start written above its bar.

It draws `summary.json`'s `heldout_by_family` rows (`heldout/evaluator.py`'s `family_table`)
and computes nothing. Left out: evaluations during training (the reward plot's right panel
has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

MODEL_LABELS = {"base": "base", "warm start": "SFT", "grpo": "SFT+GRPO"}


def plot_families(rows: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Grouped bars of `rows` as a PNG at `path`; None (nothing drawn) without rows."""
    if not rows:
        return None
    import matplotlib  # the notebooks extra: imported where a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(r["family"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    width = 0.8 / len(models)
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(families), 3.4))
    for j, model in enumerate(models):
        for i, family in enumerate(families):
            row = next((r for r in rows if r["family"] == family and r["model"] == model), None)
            if row is None:
                continue
            low, high = row["solve_rate_ci"]
            x = i + (j - (len(models) - 1) / 2) * width
            rate = row["solve_rate"]
            ax.bar(x, rate, width * 0.92, color=f"C{j}", label=None if i else _label(model))
            ax.errorbar(x, rate, yerr=[[rate - low], [high - rate]], fmt="none", ecolor="grey")
            if j == len(models) - 1 and row.get("vs_previous"):
                ax.annotate(
                    f"{row['difference']:+.2f}",
                    (x, high),
                    textcoords="offset points",
                    xytext=(0, 3),
                    ha="center",
                    fontsize="small",
                )
    ax.set_xticks(range(len(families)))
    ax.set_xticklabels([f"{f}\n({_instances(rows, f)} inst.)" for f in families], fontsize="small")
    ax.set_ylim(0, 1.3)
    ax.set_ylabel("held-out solve rate")
    ax.set_title(
        "held-out solve rate by family (95% Wilson; above the last bar: its paired gain)",
        fontsize="medium",
    )
    ax.legend(loc="upper left", fontsize="small", ncols=len(models))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _label(model: str) -> str:
    return MODEL_LABELS.get(model, model)


def _instances(rows: Sequence[dict[str, Any]], family: str) -> int:
    return max(r["instances"] for r in rows if r["family"] == family)
