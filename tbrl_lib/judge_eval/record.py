"""Turn real episodes of our agent into judge cases (messages.json + dockerfile + cases.yaml row).

    await record_case(task, policy, out_root, case_id, expected_range, note, rubric,
                      rationale="why the range, written before any judge scores it")

Runs one `tbrl_lib.rollout.run_rollout` (no judge: the case is what judges are measured on;
with `limits`, e.g. a small token budget; `extra` adds further labels to the index row), drops the
agent's system prompt (judge cases start with the task, like the upstream ones), and writes
the case directory. The expected range is the author's label for the *process* the policy
acts out, and `rationale` (optional) says why, written before any judge scores the case; the
tool outputs are real.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.rewards import RewardConfig
from tbrl_lib.rollout import RolloutConfig, run_rollout
from tbrl_lib.tasks.model import Task


async def record_case(
    task: Task,
    policy,
    out_root: str | Path,
    case_id: str,
    expected_range: tuple[float, float],
    note: str,
    rubric: list[str],
    rationale: str = "",
    limits: EpisodeLimits | None = None,
    extra: dict | None = None,
) -> Path:
    config = RolloutConfig(
        episode=limits or EpisodeLimits(), reward=RewardConfig(weights={"judge": 0.0})
    )
    result = await run_rollout(task, policy, config)
    if result.infra_error or result.trajectory is None:
        raise RuntimeError(
            f"recording case {case_id}: the rollout of {task.id} failed: {result.infra_error}"
        )
    trajectory = result.trajectory
    messages = [
        {"role": m["role"], "content": m["content"]}
        for m in trajectory.messages
        if m["role"] != "system"
    ]
    case_dir = Path(out_root) / case_id
    case_dir.mkdir(parents=True, exist_ok=True)
    (case_dir / "messages.json").write_text(
        json.dumps(messages, indent=1, ensure_ascii=False) + "\n"
    )
    (case_dir / "dockerfile").write_text(
        task.environment.dockerfile or f"FROM {task.environment.image}\n"
    )
    entry = {
        "id": case_id,
        "expected_range": list(expected_range),
        "note": note,
        "rubric": rubric,
        "source": f"episode: task {task.id}, policy {policy.name}, "
        f"termination {trajectory.termination.value}",
    }
    if rationale:
        entry["rationale"] = rationale
    entry.update(extra or {})  # further labels, e.g. `at_most` (see `judge_eval.cases`)
    upsert_index(Path(out_root) / "cases.yaml", entry)
    return case_dir


def upsert_index(index: Path, entry: dict) -> None:
    """Add or replace one case in `cases.yaml` (keeps the others and their order)."""
    data = yaml.safe_load(index.read_text()) if index.exists() else None
    cases = (data or {}).get("cases", [])
    cases = [c for c in cases if c.get("id") != entry["id"]] + [entry]
    index.write_text(
        yaml.safe_dump({"cases": cases}, sort_keys=False, width=100, allow_unicode=True)
    )
