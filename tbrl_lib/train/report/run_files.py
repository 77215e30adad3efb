"""A run folder's own files and reading them back: config.json, the reward plot, the metrics
and the saved rollouts as tables.

`write_config` writes `config.json` (the `TrainConfig`, and the TRL `GRPOConfig` it became);
`plot_rewards` draws `reward.png` from `metrics.jsonl`'s records (names: `callbacks.py`, which
writes them each step); `load_metrics` and `rollouts_frame` read a run folder back as pandas
DataFrames (notebook 04, the run report). Left out: the callbacks that write during the run
(`callbacks.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from tbrl_lib.rewards import PARTS, RewardBreakdown
from tbrl_lib.train.config.config import TrainConfig


def write_config(path: Path, config: TrainConfig, grpo_args: Any = None) -> None:
    payload: dict[str, Any] = {"tbrl": config.to_dict()}
    if grpo_args is not None:
        payload["trl"] = {k: v for k, v in grpo_args.to_dict().items() if _jsonable(v)}
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str))


PART_STYLES = (
    {"color": "C1", "linestyle": "--", "marker": "^", "linewidth": 2.5},
    {"color": "C2", "linestyle": ":", "marker": "s"},
    {"color": "C4", "linestyle": (0, (5, 1)), "marker": "d"},
    {"color": "C5", "linestyle": (0, (3, 1, 1, 1)), "marker": "v"},
    {"color": "C6", "linestyle": (0, (1, 2)), "marker": "P"},
)
"""Line styles of the reward parts, in `PARTS` order (`tests`, `judge`, `budget`, ...);
cycled past the last."""
CURVES = (
    ("reward/total", "reward (total)", {"color": "C0", "linestyle": "-", "marker": "o"}),
    *((f"reward/{name}", name, PART_STYLES[i % len(PART_STYLES)]) for i, name in enumerate(PARTS)),
    (
        "reward/solved_rate",
        "solved share",
        {"color": "C3", "linestyle": "-.", "marker": "x", "markersize": 7, "linewidth": 1},
    ),
)
"""Metric, label and line style of the reward panel: the total, each reward part a run
logged, the solved share; each line its own colour, dash and marker, so a component equal to
another (tests and solved share, when every test counts alike) still shows."""


class HeldoutPoint(NamedTuple):
    step: int
    solve_rate: float
    low: float | None
    high: float | None
    label: str


def heldout_points(
    records: list[dict[str, Any]], before: dict[str, dict[str, Any]] | None = None
) -> list[HeldoutPoint]:
    """The held-out solve rate with its Wilson interval: the models evaluated before GRPO
    (`before`: name -> their `eval/*` metrics, e.g. base and warm start) at step 0, then
    every evaluation during training at its step."""
    named = [(0, metrics, name) for name, metrics in (before or {}).items()]
    logged = [(r["step"], r, "") for r in records if r.get("eval/solve_rate") is not None]
    return [
        HeldoutPoint(
            step,
            m["eval/solve_rate"],
            m.get("eval/accuracy_ci_low"),
            m.get("eval/accuracy_ci_high"),
            label,
        )
        for step, m, label in named + logged
    ]


def plot_rewards(
    records: list[dict[str, Any]], path: Path, before: dict[str, dict[str, Any]] | None = None
) -> Path:
    """Two panels as a PNG: the reward by component per step, and the held-out solve rate
    with its 95% Wilson interval (the models evaluated `before` GRPO at step 0)."""
    import matplotlib  # the notebooks extra: imported where a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (rewards, heldout) = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    drawn = 0
    for key, label, style in CURVES:
        points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
        if points:
            steps, values = zip(*points)
            rewards.plot(steps, values, label=label, **{"markersize": 4, **style})
            drawn += 1
    _finish_panel(rewards, "reward by component (training rollouts)", drawn, "no logged steps")
    rewards.set_ylabel("mean over the step's rollouts")
    points = heldout_points(records, before)
    named = [p for p in points if p.label]
    spread = 0.015 * max([p.step for p in points] + [8])  # x offset between step-0 models
    for point in points:
        low = point.solve_rate if point.low is None else point.low
        high = point.solve_rate if point.high is None else point.high
        i = named.index(point) if point.label else None
        heldout.errorbar(
            # the models evaluated before GRPO share step 0: side by side around it
            point.step + (0.0 if i is None else spread * (i - (len(named) - 1) / 2)),
            point.solve_rate,
            yerr=[[point.solve_rate - low], [high - point.solve_rate]],
            fmt="s" if i is None else _MARKERS[i % len(_MARKERS)],
            color="black" if i is None else f"C{4 + i}",
            ecolor="grey",
            capsize=4,
            label=f"{point.label} (before GRPO)" if point.label else None,
        )
    logged = [p for p in points if not p.label]
    if logged:  # one legend entry for the evaluations during training
        heldout.plot([], [], "s", color="black", label="policy during/after GRPO")
    _finish_panel(
        heldout,
        "held-out solve rate (95% Wilson interval)",
        len(points),
        "no held-out evaluation",
        legend="lower right",  # the rate rises: that corner stays empty longest
    )
    if points:
        heldout.set_xlim(left=-0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


_MARKERS = ("o", "D", "^", "v")


def _finish_panel(ax: Any, title: str, curves: int, empty: str, legend: str = "best") -> None:
    from matplotlib.ticker import MaxNLocator  # with pyplot, where a plot is drawn

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if curves:
        ax.legend(loc=legend, fontsize="small")
    elif not ax.lines and not ax.collections:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("optimizer step")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title, fontsize="medium")


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except TypeError:
        return False


def load_metrics(run_dir: Path):
    """`metrics.jsonl` of a run as a pandas DataFrame (one row per logged step)."""
    lines = (Path(run_dir) / "metrics.jsonl").read_text().splitlines()
    return pd.DataFrame([json.loads(line) for line in lines if line.strip()])


def rollouts_frame(run_dir: Path, reply_chars: int = 160):
    """Every saved rollout: task, reward and its parts, termination, turns, tokens, the first
    reply's start."""
    rows = []
    for path in sorted((Path(run_dir) / "trajectories").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            replies = [
                m["content"] for m in r["details"].get("messages", []) if m["role"] == "assistant"
            ]
            rows.append(
                {
                    "file": path.name,
                    "task_id": r["task_id"],
                    "reward": r["reward"],
                    **_part_scores(r.get("breakdown")),
                    "infra_error": r["infra_error"],
                    "termination": r["termination"],
                    "turns": r["turns"],
                    "completion_tokens": len(r["completion_ids"]),
                    "assistant_tokens": sum(r["env_mask"]),
                    "first_reply": (replies[0][:reply_chars] if replies else ""),
                }
            )
    return pd.DataFrame(rows)


def _part_scores(breakdown: dict[str, Any] | None) -> dict[str, float | None]:
    """Each reward part's score of a saved rollout (None when masked), also from a rollout
    saved before the parts were data; a column per registered part."""
    scores = {} if breakdown is None else RewardBreakdown.from_dict(breakdown).scores
    return {**dict.fromkeys(PARTS), **scores}
