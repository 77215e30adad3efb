"""What a finished run says about itself: `summary.json` (the headline numbers notebook 04 and
the tests read back), `reward.png`, and `families.png` when several families were evaluated.

    preset, model, model_path, steps, rollouts, wall_seconds, run_dir
    world_size        the training processes the run ran in (every node's)
    phase_seconds     wall seconds of each part: base evaluation, warm start (demonstrations
                      and SFT), its evaluation, grpo (`trainer.train()`), final evaluation
    mean_reward, infra_error_rate   over the logged steps (`reward/total`, `rollout/…`)
    reward_trend      did GRPO raise the reward: TRL's `train/reward` over the first and last
                      3 steps, the rise, the mean share of groups with no reward variance
    dynamic_sampling  flat groups before/after refill, groups refilled, extra rollouts
    filtering, skipped_tasks, stopped_early   the curriculum's table, and why a run stopped
    warm_start        the SFT's demonstrations, steps and loss before/after
    heldout           base, warm start, final on the held-out instances, with paired intervals
    heldout_by_family the same per family and pooled (`all`), numbers and intervals
    heldout_bundled   base, warm start, final on the easiest bundled tasks (`heldout.bundled`)
    memory            the memory plan beside the peak resident memory the run reached, per
                      phase (`phases`: planned and peak GiB) and per GRPO step (`steps`)

Left out: per-step numbers (metrics.jsonl has them).
"""

from __future__ import annotations

from typing import Any

from tbrl_lib.run_folder import record_summary
from tbrl_lib.train.grpo.session import TrainingSession
from tbrl_lib.train.heldout.evaluator import before_after_table, bundled_table, family_table
from tbrl_lib.train.plan.memory_plan import memory_report
from tbrl_lib.train.report.family_plot import plot_families
from tbrl_lib.train.report.run_files import plot_rewards
from tbrl_lib.train.step.hooks import process_state
from tbrl_lib.train.step.runner import mean

WARM_START_KEYS = (
    "checkpoint",
    "demos",
    "demos_right",
    "demos_careful",
    "steps",
    "loss_before",
    "loss_after",
    "seconds",
    "batch_tokens",
    "mixed_precision",
)


def summarize_run(
    session: TrainingSession,
    steps: int,
    evals: dict[str, dict[str, Any]],
    warm: dict[str, Any] | None,
    phases: dict[str, float],
    main: bool = True,
) -> dict[str, Any]:
    """The run's summary; the `main` process also writes summary.json and reward.png.
    `phases`: seconds per part of the run (`total`: all of it)."""
    records, curriculum = session.metrics.records, session.curriculum
    rewards = [r["reward/total"] for r in records if r.get("reward/total") is not None]
    summary = {
        "preset": session.config.preset,
        "model": session.config.model.name,
        "model_path": session.model_path,
        "steps": steps,
        "world_size": process_state().num_processes,
        "rollouts": sum(r.get("rollout/count", 0) for r in records),
        "mean_reward": mean(rewards),
        "infra_error_rate": mean(r.get("rollout/infra_error_rate", 0.0) for r in records),
        "skipped_tasks": curriculum.skipped(),
        "task_defects": session.task_defects,
        "stopped_early": session.stop.reason,
        "filtering": curriculum.report(),
        "reward_trend": reward_trend(records),
        "dynamic_sampling": sampling_totals(records),
        "warm_start": {k: warm[k] for k in WARM_START_KEYS if k in warm} if warm else None,
        "heldout": before_after_table(evals) if evals else [],
        "heldout_by_family": family_table(evals, session.heldout.tasks) if evals else [],
        "heldout_bundled": bundled_table(evals),
        "memory": memory_report(session.config, phases, warm and warm.get("batch_tokens")),
        "wall_seconds": phases["total"],
        "phase_seconds": phases,
        "run_dir": str(session.out),
    }
    if main:
        for line in summary["memory"].get("over_plan", []):
            print(line, flush=True)
        before = {n: e["metrics"] for n, e in evals.items() if n != "grpo"}
        plot_rewards(records, session.out / "reward.png", before)
        if len({r["family"] for r in summary["heldout_by_family"]}) > 1:
            plot_families(summary["heldout_by_family"], session.out / "families.png")
        record_summary(session.out, summary)
    return summary


def reward_trend(records: list[dict[str, Any]], window: int = 3) -> dict[str, float]:
    """Did GRPO raise the reward: TRL's `train/reward` averaged over the first and the last
    `window` steps, their difference, and the mean share of groups with no reward variance
    (`train/frac_reward_zero_std`, after dynamic sampling's refill)."""
    rewards = [r["train/reward"] for r in records if r.get("train/reward") is not None]
    if not rewards:
        return {}
    first, last = mean(rewards[:window]), mean(rewards[-window:])
    return {
        f"reward_first{window}": first,
        f"reward_last{window}": last,
        "rise": last - first,
        "zero_std_share": mean(
            r["train/frac_reward_zero_std"]
            for r in records
            if r.get("train/frac_reward_zero_std") is not None
        ),
    }


def sampling_totals(records: list[dict[str, Any]]) -> dict[str, float]:
    """Dynamic sampling over the run: mean share of flat groups before/after refill, groups
    refilled and extra rollouts (metrics are per logged step)."""
    rows = [r for r in records if "sampling/zero_std_groups" in r]
    if not rows:
        return {}
    return {
        "zero_std_groups_before": mean(r["sampling/zero_std_groups"] for r in rows),
        "zero_std_groups_after": mean(r.get("sampling/zero_std_after", 0.0) for r in rows),
        "refilled_groups": sum(r.get("sampling/refilled_groups", 0.0) for r in rows),
        "refill_rollouts": sum(r.get("sampling/refill_rollouts", 0.0) for r in rows),
    }
