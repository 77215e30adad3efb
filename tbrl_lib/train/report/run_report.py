"""What notebook 04 shows of a finished run, result first: each function turns the run's
summary, config or folder into one block of the report.

- `headline_lines(summary, config)`: preset, steps, wall time; the reward first -> last; the
  held-out solve rate of base, warm start and final with the paired interval.
- `key_settings(config)`: a dozen settings that shape the run (the full config: `show_config`).
- `launch_table(presets)`: the command each role runs, per preset.
- `step_table(records, columns)`: per-step metrics, step as the index, long runs thinned.
- `heldout_table`, `family_heldout_table`, `warm_start_table`, `sampling_table`,
  `filtering_table`, `memory_table`: the summary's parts as tidy tables.
- `rollouts_by_task(run)`: the saved rollouts, one row per task.
- `deciding_turn(traj)`, `episode_pair(run, summary)`: one held-out instance under the final
  policy beside the same instance under the warm start, each open at its deciding turn.

Numbers are formatted by `notebook_tools.tables.tidy`; nothing here computes a statistic
(the summary, the metrics file and the evaluation results hold them).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.evaluate.results import RunResults, TrialResult
from tbrl_lib.notebook_tools.display import value_text
from tbrl_lib.notebook_tools.tables import number_text, tidy
from tbrl_lib.rewards import PARTS
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.plan.launch import launch_commands
from tbrl_lib.train.report.run_files import rollouts_frame
from tbrl_lib.viewers.trajectory_html import trajectory_html

REWARD_COLUMNS = {
    "step": "step",
    "train/reward": "reward",
    **{f"reward/{name}": name for name in PARTS},
    "reward/solved_rate": "solved share",
    "train/frac_reward_zero_std": "flat groups",
    "sampling/refilled_groups": "groups refilled",
    "eval/solve_rate": "held-out solve rate",
}
"""Per-step reward table: metric -> column header (each reward part the run logged)."""
HEALTH_COLUMNS = {
    "step": "step",
    "train/loss": "loss",
    "train/grad_norm": "grad norm",
    "train/entropy": "entropy",
    "rollout/turns": "turns",
    "rollout/infra_error_rate": "infra errors",
    "curriculum/active_tasks": "active tasks",
    "train/step_time": "step s",
}
"""Per-step optimisation and rollout health: metric -> column header."""
STATE_CHANGING = ("bash", "file.write", "file.edit", "file.multi_edit")
"""Calls that change what the tests see (the rest read, plan or finish)."""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def headline_lines(summary: Mapping[str, Any], config: TrainConfig | None = None) -> list[str]:
    """Three or four lines (HTML) that say what the run did and what came of it."""
    minutes = (summary.get("wall_seconds") or 0) / 60
    rollouts = number_text(summary.get("rollouts"))
    world = summary.get("world_size") or 1
    processes = f" in {world} training processes" if world > 1 else ""
    lines = [
        f"<b>{_esc(summary.get('preset'))}</b> ({_esc(summary.get('model'))}): "
        f"{_plural(summary.get('steps') or 0, 'GRPO step')}{processes}, {rollouts} rollouts, "
        f"{minutes:.1f} min wall time"
    ]
    trend = summary.get("reward_trend") or {}
    first = next((k for k in trend if k.startswith("reward_first")), None)
    last = next((k for k in trend if k.startswith("reward_last")), None)
    if first and last:
        window = first.removeprefix("reward_first")
        lines.append(
            f"<b>reward</b> {trend[first]:.2f} &rarr; {trend[last]:.2f} "
            f"({trend['rise']:+.2f}; mean of the first and the last {window} steps)"
        )
    else:
        lines.append("<b>reward</b>: no GRPO step logged")
    rows = summary.get("heldout") or []
    if rows:
        count = (
            f" on {config.heldout.instances * len(config.data.families)} instances"
            if config
            else ""
        )
        rates = " &rarr; ".join(
            f"{_esc(_model_name(r['model']))} {r['solve_rate']:.2f}" for r in rows
        )
        paired = ""
        if len(rows) > 1 and rows[-1].get("vs_previous"):
            paired = (
                f"; {_esc(_model_name(rows[-1]['model']))} vs "
                f"{_esc(_model_name(rows[-2]['model']))} {_esc(rows[-1]['vs_previous'])} "
                "(paired, 95% bootstrap)"
            )
        lines.append(f"<b>held-out solve rate</b>{count}: {rates}{paired}")
    else:
        lines.append("<b>held-out solve rate</b>: not evaluated (heldout.instances: 0)")
    if summary.get("stopped_early"):
        lines.append(f"<b>stopped early</b>: {_esc(summary['stopped_early'])}")
    elif summary.get("infra_error_rate"):
        lines.append(f"<b>infra errors</b>: {summary['infra_error_rate']:.1%} of rollouts, masked")
    return lines


def _plural(count: float, noun: str) -> str:
    return f"{count:g} {noun}{'' if count == 1 else 's'}"


def _model_name(name: str) -> str:
    return "final" if name == "grpo" else name


def key_settings(config: TrainConfig) -> pd.DataFrame:
    """The settings that shape a run, one readable line each."""
    grpo, sft, data, episode = config.grpo, config.sft, config.data, config.rollout.episode
    reward, launch, heldout = config.rollout.reward, config.launch, config.heldout
    tasks = (
        f"{data.family_tasks} generated tasks of each of {', '.join(data.families)} "
        f"({value_text(data.family_difficulty)})"
        if data.families
        else f"{data.tasks}" + (f" (first {data.max_tasks})" if data.max_tasks else "")
    )
    model = config.model.name + (
        f" + LoRA r={config.model.lora_rank}" if config.model.use_lora else ""
    )
    per_step = grpo.per_device_batch_size * grpo.gradient_accumulation_steps
    rows = {
        "model": model,
        "tasks": tasks,
        "GRPO steps": grpo.max_steps,
        "rollouts per step": f"{per_step} "
        f"({_plural(per_step // grpo.num_generations, 'group')} of {grpo.num_generations})",
        "optimizer": f"{grpo.optimizer}, lr {grpo.learning_rate:g} ({grpo.lr_scheduler})",
        "loss": f"{grpo.loss_type}, beta {grpo.beta:g}",
        "sampling temperature": grpo.temperature,
        "reward": reward.describe(),
        "episode": f"{episode.max_turns} turns, {episode.max_total_tokens:,} tokens, "
        f"{episode.time_limit_s:g} s",
        "warm start": f"{sft.demos} demonstrations x {_plural(sft.epochs, 'epoch')}, lr {sft.learning_rate:g}"
        if sft.demos
        else "none",
        "held-out": f"{heldout.instances} instances, every {_plural(heldout.every, 'step')}"
        if heldout.instances
        else "none",
        "curriculum": (
            f"skip after {config.curriculum.filter_after_groups} flat groups, retry after "
            f"{config.curriculum.retry_skipped_after_steps} steps; dynamic sampling "
            + ("on" if config.curriculum.dynamic_sampling else "off")
        )
        if config.curriculum.enabled
        else "off",
        "hardware": f"{launch.num_nodes} node(s) x {launch.gpus_per_node} GPU(s), "
        f"{launch.distributed}, generation {launch.generation_backend}"
        if launch.gpus_per_node
        else f"CPU, generation {launch.generation_backend}",
        "seed": config.seed,
    }
    frame = pd.DataFrame({"value": [str(v) for v in rows.values()]}, index=list(rows))
    frame.index.name = "setting"
    return frame


def launch_table(configs: Sequence[TrainConfig]) -> pd.DataFrame:
    """The command each role runs, per preset (`tbrl train launch` writes them to files)."""
    rows = [
        {"preset": c.preset, "role": role, "command": command}
        for c in configs
        for role, command in launch_commands(c).items()
    ]
    return pd.DataFrame(rows).set_index(["preset", "role"])


def step_table(
    records: Sequence[Mapping[str, Any]], columns: Mapping[str, str], max_rows: int = 30
) -> pd.DataFrame:
    """Per-step metrics (`columns`: metric -> header, `step` first), step as the index. A run
    of more than `max_rows` logged steps shows every k-th step, the evaluations' steps and
    the last one."""
    frame = pd.DataFrame(list(records))
    if frame.empty or "step" not in frame:
        return pd.DataFrame()
    if len(frame) > max_rows:
        every = -(-len(frame) // max_rows)
        keep = (frame.index % every == 0) | (frame.index == len(frame) - 1)
        if "eval/solve_rate" in frame:
            keep |= frame["eval/solve_rate"].notna()
        frame = frame[keep]
    return tidy(frame, index="step", labels=columns)


def heldout_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Base, warm start and final on the held-out instances, with the paired differences."""
    rows = summary.get("heldout") or []
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    frame["model"] = frame["model"].map(_model_name)
    labels = {
        "model": "model",
        "solve_rate": "solve rate",
        "interval (Wilson 95%)": "interval (Wilson 95%)",
        "mean_reward": "mean reward",
        "vs_previous": "vs the row above (paired, 95%)",
        "folder": "episodes under eval/",
    }
    return tidy(frame, index="model", labels=labels)


def family_heldout_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Per family (and pooled, `all`; the bundled tasks last): each model's solve rate, one
    column per model, and the paired difference of the last model against the one before."""
    rows = summary.get("heldout_by_family") or []
    if len({r["family"] for r in rows}) < 2:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    frame["model"] = frame["model"].map(_model_name)
    table = frame.pivot(index="family", columns="model", values="solve_rate")
    table = table[list(dict.fromkeys(frame["model"]))].reindex(list(dict.fromkeys(frame["family"])))
    table.insert(0, "instances", frame.groupby("family")["instances"].max())
    last = frame[frame["model"] == frame["model"].iloc[-1]].set_index("family")
    if "vs_previous" in last:
        table["last vs the one before (paired, 95%)"] = last["vs_previous"]
    for row in summary.get("heldout_bundled") or []:
        table.loc["bundled (easiest tasks)", _model_name(row["model"])] = row["solve_rate"]
        table.loc["bundled (easiest tasks)", "instances"] = row["tasks"]
    return tidy(table)


def warm_start_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    labels = {
        "demos": "demonstrations",
        "demos_right": "teacher right",
        "steps": "SFT steps",
        "loss_before": "loss before",
        "loss_after": "loss after",
        "seconds": "seconds",
    }
    return _one_row(summary.get("warm_start"), labels, "warm start")


def sampling_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    labels = {
        "zero_std_groups_before": "flat groups before refill",
        "zero_std_groups_after": "after refill",
        "refilled_groups": "groups refilled",
        "refill_rollouts": "extra rollouts",
    }
    return _one_row(summary.get("dynamic_sampling"), labels, "over the run")


def memory_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Each phase's planned and measured peak memory (GiB), phase as the index; where the
    phase noted its largest batches, the plan at them too (the formulas' own check: a phase
    whose replies stop early peaks below its full-length plan)."""
    phases = (summary.get("memory") or {}).get("phases") or {}
    if not phases:
        return pd.DataFrame()
    frame = pd.DataFrame.from_dict(phases, orient="index")
    frame["ratio"] = frame["peak_gib"] / frame["planned_gib"].astype(float)
    if "reached_plan_gib" in frame:
        frame["reached_ratio"] = frame["peak_gib"] / frame["reached_plan_gib"].astype(float)
    labels = {
        "planned_gib": "plan GiB",
        "peak_gib": "peak GiB",
        "ratio": "peak / plan",
        "reached_plan_gib": "plan at reached batches GiB",
        "reached_ratio": "peak / that plan",
        "children_peak_gib": "children GiB",
    }
    return tidy(frame, labels=labels)


def _one_row(values: Mapping[str, Any] | None, labels: dict[str, str], name: str) -> pd.DataFrame:
    """`values` as a one-row table named `name` (empty when there are none)."""
    if not values:
        return pd.DataFrame()
    return tidy(pd.DataFrame([values]), labels=labels).rename(index={0: name})


def filtering_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The curriculum's filtering report (one row per task it ever skipped), task as index."""
    rows = summary.get("filtering") or []
    return tidy(pd.DataFrame(rows), index="task_id") if rows else pd.DataFrame()


def rollouts_by_task(run: str | Path) -> pd.DataFrame:
    """The run's saved rollouts, one row per task: how many, mean reward and its parts,
    share that passed every test, turns, and how most of them ended."""
    frame = rollouts_frame(Path(run))
    if frame.empty:
        return frame
    frame["solved"] = frame["tests"] >= 1.0
    grouped = frame.groupby("task_id")
    table = pd.DataFrame(
        {
            "rollouts": grouped.size(),
            "reward": grouped["reward"].mean(),
            **{name: grouped[name].mean() for name in PARTS if name in frame},
            "solved share": grouped["solved"].mean(),
            "turns": grouped["turns"].mean(),
            "infra errors": grouped["infra_error"].sum(),
            "most ended": grouped["termination"].agg(lambda s: s.mode().iat[0]),
        }
    )
    table.index.name = "task"
    return tidy(table)


def deciding_turn(traj: Trajectory) -> int | None:
    """The (0-based) turn whose action decided the outcome: the last turn that changed what
    the tests see (a shell command or a file write/edit that ran), else the last turn (the
    one that ended the episode: a finish, a reply without an action). None without turns."""
    if not traj.turns:
        return None
    changed = [
        i
        for i, turn in enumerate(traj.turns)
        if any(c.ok and c.kind in STATE_CHANGING for c in turn.calls)
    ]
    return changed[-1] if changed else len(traj.turns) - 1


def episode_pair(run: str | Path, summary: Mapping[str, Any]) -> str:
    """One held-out instance under the final policy beside the same instance under the warm
    start (the base model without one), each open at its deciding turn: an instance where
    their outcomes differ when there is one. Empty without held-out evaluations."""
    rows = summary.get("heldout") or []
    if len(rows) < 2:
        return ""
    final, before = rows[-1], rows[-2]
    evals = Path(run) / "eval"
    results = {
        name: {t.task_id: t for t in RunResults.load(evals / row["folder"]).trials}
        for name, row in (("final", final), (_model_name(before["model"]), before))
    }
    (a, first), (b, second) = results.items()
    shared = [task for task in first if task in second]
    if not shared:
        return ""
    differ = [t for t in shared if first[t].resolved != second[t].resolved]
    task = next((t for t in differ if first[t].resolved), differ[0] if differ else shared[0])
    columns = [
        _episode_column(name, trials[task], evals / row["folder"])
        for name, trials, row in ((a, first, final), (b, second, before))
    ]
    return (
        f"<div><b>{_esc(task)}</b>: the final policy (left) and the "
        f"{_esc(b)} (right), each open at the turn that decided it</div>"
        "<div style='display:flex;gap:12px;align-items:flex-start'>"
        + "".join(f"<div style='flex:1;min-width:0'>{c}</div>" for c in columns)
        + "</div>"
    )


def _episode_column(name: str, trial: TrialResult, folder: Path) -> str:
    outcome = "solved" if trial.resolved else "not solved"
    traj = Trajectory.model_validate_json((folder / trial.trajectory).read_text())
    reward = {
        "resolved": trial.resolved,
        "reward": trial.reward,
        "tests score": trial.score,
        "failed tests": trial.failed_tests,
    }
    return (
        f"<div><b>{_esc(name)}</b>: {outcome}</div>"
        f"{trajectory_html(traj, reward, open_turn=deciding_turn(traj))}"
    )
