"""The `rollout_func` TRL's GRPOTrainer calls: prompts in, multi-turn episodes out.

TRL hands `rollout_func(prompts, trainer)` this process's slice of the generation batch:
each dataset prompt already repeated `num_generations` times in a row (TRL's
`RepeatSampler` does that), so one rollout per prompt entry gives every task its group.
(TRL 1.15's docstring says the slice comes without duplication; it does not, and
tests/train/test_rollout.py pins what it actually does.)
For each entry `RolloutRunner`:

1. maps the prompt back to its `Task` (`TaskIndex`: dataset rows carry the task JSON, so a
   training node needs nothing but the parquet file);
2. runs `tbrl_lib.rollout.run_rollout` for it (the same rollout evaluation and validation
   use: sandbox, episode, verifier + judge, the mission's reward), all entries concurrently
   on one asyncio loop (`sandbox_concurrency` at a time), with a policy that samples from
   the trainer's current weights (a `TokenPolicy` over `tbrl_lib.policies.batching`);
3. returns `prompt_ids` (the first prompt), `completion_ids` (everything after it: assistant
   tokens with env_mask 1, observations and chat scaffolding with env_mask 0, exactly as
   generated), `env_mask`, `logprobs`, and `reward_breakdowns`, which the reward functions
   (`tbrl_lib.rewards.reward_function`) hand back to TRL: `tbrl_total` (weight 1) is the
   reward; `tbrl_tests` and `tbrl_judge` (weight 0) are logged beside it.

Infra errors (sandbox or model backend failed) never teach the model it failed: the reward
is None, which TRL turns into a zero advantage and leaves out of the group baseline, and
the env_mask is all zeros, so no token of that rollout enters the loss. A run whose rollouts
are mostly infra errors stops (`max_infra_error_rate`) and names the first errors. Any other
exception is a bug and stops training: it is never masked.

Dynamic sampling (DAPO): a group whose rewards are all equal (every rollout solved, none,
or the same partial credit) has zero advantage everywhere and only dilutes the loss. With
`refill` set, such a group is dropped and replaced, in the same step, by a group of another
task (`refill(n, exclude)` picks it: the curriculum's next tasks); up to `refill_rounds`
rounds. A replacement group that is flat too is kept out and the original stays (the batch
keeps TRL's shape). Dropped groups are still saved (`dropped: true`) and counted by the
curriculum; `sampling/...` metrics say how many. It needs each group whole in this
process's slice (always true on one process); when a slice splits a group it does nothing.

Log-probs: TRL needs the sampler's log-probs only for vLLM importance-sampling correction
(on by default with vLLM) and off-policy masking. We return them when the backend gives them
(0.0 at env_mask=0 positions, which the mask removes), else None: TRL accepts None when
`use_vllm` is off, which is the HF/CPU path.

Metrics (appended to TRL's own, averaged per logging step): `rollout/…` (turns, tokens,
seconds, infra error rate, termination shares), `reward/…` (total, tests, judge, judge
missing rate, solved share), `judge/cost_usd`, `sandbox/…` (startup, commands, seconds).

Several processes (accelerate): each runs its slice's rollouts and saves them in its own
file (`step-…-call-…-rank<i>.jsonl`); a small row per rollout is then gathered from every
process (`gather_across`), so the metrics, the infra error check and the curriculum's counts
cover all processes' rollouts and are the same on each (process 0 writes metrics.jsonl).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tbrl_lib.aio import run_sync
from tbrl_lib.rollout import AGENT_TIMEOUT, RolloutResult
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.curriculum import no_spread
from tbrl_lib.train.processes import gather_across, rank_suffix


def prompt_key(messages: Sequence[dict[str, Any]] | str) -> str:
    """Stable key of a prompt (chat messages or text), used to find its task again."""
    if isinstance(messages, str):
        payload = messages
    else:
        payload = json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class TaskIndex:
    """Prompt -> Task, from dataset rows that carry `prompt` and the task JSON (`task`)."""

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self.tasks: dict[str, Task] = {}
        owners: dict[str, str] = {}
        for number, row in enumerate(rows, start=1):
            if "task" not in row or "prompt" not in row:
                raise ValueError(
                    f"dataset row {number} lacks a 'prompt' or 'task' column; write the "
                    "dataset with tbrl_lib.tasks (parquet format) so each row carries both"
                )
            task = (
                row["task"]
                if isinstance(row["task"], Task)
                else Task.model_validate_json(row["task"])
            )
            key = prompt_key(row["prompt"])
            if key in owners and owners[key] != task.id:
                raise ValueError(
                    f"tasks {owners[key]!r} and {task.id!r} have identical prompts; rollouts "
                    "could not tell them apart: drop or reword one of them"
                )
            owners[key] = task.id
            self.tasks[key] = task

    def __len__(self) -> int:
        return len(self.tasks)

    def task_for(self, prompt: Sequence[dict[str, Any]] | str) -> Task:
        try:
            return self.tasks[prompt_key(prompt)]
        except KeyError:
            text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
            raise KeyError(
                f"no task in the training set has this prompt (last message starts "
                f"{text[:80]!r}); was the dataset built with the same system prompt?"
            ) from None


@dataclass
class Rollout:
    """One episode as training sees it: token ids, mask, and its reward breakdown."""

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float] | None
    reward: float | None
    """The combined reward (`RewardBreakdown.total`); None for an infra error (masked)."""
    breakdown: dict[str, Any] | None = None
    """`RewardBreakdown.to_dict()`: tests, judge, weights, notes; None when masked."""
    infra_error: bool = False
    error: str | None = None
    termination: str = "unknown"
    turns: int = 0
    seconds: float = 0.0
    judge_cost_usd: float = 0.0
    sandbox: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    """Test outcomes, judge verdict, messages: what is worth keeping with the trajectory."""
    dropped: bool = False
    """Its group had no reward variance and was replaced by a refill group (not trained on)."""

    @classmethod
    def from_result(cls, result: RolloutResult) -> Rollout:
        """The training record of a rollout. No tokens (the episode ended before the first
        reply, or overran its limit and was stopped) leaves nothing to train on: masked."""
        traj = result.trajectory
        details = result.to_dict()
        judge_cost = float((details.get("judge") or {}).get("cost_usd") or 0.0)
        common = dict(
            termination=result.termination,
            turns=len(traj.turns) if traj else 0,
            seconds=result.timings.get("total", 0.0),
            judge_cost_usd=judge_cost,
            sandbox=result.sandbox,
            details=details,
        )
        error = result.infra_error or result.task_error
        if error is None and (traj is None or not traj.prompt_ids or not traj.completion_ids):
            why = (
                "overran its time limit"
                if result.termination == AGENT_TIMEOUT
                else (f"ended ({result.termination}) before the first reply")
            )
            error = f"no tokens to train on: the episode {why}"
        if error is not None:
            return cls(
                result.task_id,
                (traj and traj.prompt_ids) or [],
                (traj and traj.completion_ids) or [],
                (traj and traj.env_mask) or [],
                None,
                reward=None,
                infra_error=True,
                error=error,
                **common,
            )
        assert result.reward is not None and traj is not None
        return cls(
            result.task_id,
            traj.prompt_ids,
            traj.completion_ids,
            traj.env_mask,
            traj.logprobs,
            reward=result.reward.total,
            breakdown=result.reward.to_dict(),
            **common,
        )


RolloutFn = Callable[[Task], Any]
"""`async (task) -> RolloutResult`: one rollout end to end (`tbrl_lib.rollout.run_rollout`)."""


class InfraErrorRateExceeded(RuntimeError):
    """Too many rollouts were infrastructure errors: the run measures the machines, not the model."""


class RolloutRunner:
    """Callable as TRL's `rollout_func`; runs rollouts with `rollout_fn` and shapes the output."""

    def __init__(
        self,
        index: TaskIndex,
        rollout_fn: RolloutFn,
        concurrency: int,
        fallback_prompt_ids: Callable[[Task], list[int]],
        eos_id: int,
        trajectories_dir: Path | None = None,
        on_rollouts: Callable[[list[str], list[float | None]], None] | None = None,
        progress: bool = True,
        max_infra_error_rate: float = 1.0,
        infra_check_after: int = 1,
        group_size: int = 1,
        refill: Callable[[int, set[str]], list[Task]] | None = None,
        refill_rounds: int = 1,
        on_refills: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.index, self.rollout_fn, self.concurrency = index, rollout_fn, concurrency
        self.fallback_prompt_ids, self.eos_id = fallback_prompt_ids, eos_id
        self.trajectories_dir, self.on_rollouts, self.progress = (
            trajectories_dir,
            on_rollouts,
            progress,
        )
        self.max_infra_error_rate, self.infra_check_after = max_infra_error_rate, infra_check_after
        self.group_size, self.refill, self.refill_rounds = group_size, refill, refill_rounds
        self.on_refills = on_refills
        """Called each step with the refill draws of every process (the curriculum's count)."""
        self.calls = 0
        self.total = 0
        self.infra_errors: list[str] = []
        self.last_draws: list[str] = []
        """Tasks `refill` drew in the latest call (this process)."""

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        tasks = [self.index.task_for(p) for p in prompts]
        rollouts = run_sync(self.run_all(tasks))
        rollouts, extra, sampling = run_sync(self.dynamic_sampling(rollouts))
        self.calls += 1
        step = getattr(getattr(trainer, "state", None), "global_step", self.calls)
        if self.trajectories_dir is not None:
            name = f"step-{step:05d}-call-{self.calls:04d}{rank_suffix()}.jsonl"
            save_rollouts(rollouts + extra, self.trajectories_dir / name)
        # Every decision below uses all processes' rollouts, so every process takes the same one.
        reports = gather_across(
            {
                "kept": [rollout_row(r) for r in rollouts],
                "dropped": [rollout_row(r) for r in extra],
                "sampling": sampling,
                "draws": self.last_draws,
            }
        )
        kept = [row for report in reports for row in report["kept"]]
        seen = [row for report in reports for row in report["kept"] + report["dropped"]]
        self._check_infra_rate(seen)
        metrics = {
            **metrics_of_rows(kept),
            **combine_sampling([r["sampling"] for r in reports]),
        }
        trainer_metrics = getattr(trainer, "_metrics", None)
        if trainer_metrics is not None:
            for name, value in metrics.items():
                trainer_metrics["train"][name].append(value)
        if self.on_rollouts is not None:
            self.on_rollouts([r["task_id"] for r in seen], [r["reward"] for r in seen])
        if self.on_refills is not None:
            self.on_refills([t for report in reports for t in report["draws"]])
        return to_trl_output(rollouts)

    def state_dict(self) -> dict[str, Any]:
        """Counters a resumed run continues (trajectory file names, the infra error rate)."""
        return {"calls": self.calls, "total": self.total, "infra_errors": self.infra_errors}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls, self.total = state["calls"], state["total"]
        self.infra_errors = list(state["infra_errors"])

    def _check_infra_rate(self, rows: list[dict[str, Any]]) -> None:
        self.total += len(rows)
        self.infra_errors += [f"{r['task_id']}: {r['error']}" for r in rows if r["infra_error"]]
        rate = len(self.infra_errors) / self.total if self.total else 0.0
        if self.total >= self.infra_check_after and rate > self.max_infra_error_rate:
            first = "\n  ".join(self.infra_errors[:5])
            raise InfraErrorRateExceeded(
                f"{len(self.infra_errors)} of {self.total} rollouts ({rate:.0%}) were infrastructure "
                f"errors, above max_infra_error_rate={self.max_infra_error_rate:g}; training stopped "
                f"(these rollouts teach nothing). First errors:\n  {first}"
            )

    async def dynamic_sampling(
        self, rollouts: list[Rollout]
    ) -> tuple[list[Rollout], list[Rollout], dict[str, float]]:
        """Replace flat groups by refill groups: (batch to train on, dropped rollouts,
        `sampling/...` metrics). A no-op without `refill` or when groups are not whole."""
        size = self.group_size
        self.last_draws = []
        groups = [rollouts[i : i + size] for i in range(0, len(rollouts), size)]
        whole = (
            size > 1
            and len(rollouts) % size == 0
            and all(len({r.task_id for r in g}) == 1 for g in groups)
        )
        if self.refill is None or not whole:
            return rollouts, [], {}
        flat = [i for i, g in enumerate(groups) if flat_group(g)]
        stats = {
            "sampling/zero_std_groups": len(flat) / len(groups),
            "sampling/refilled_groups": 0.0,
            "sampling/refill_rollouts": 0.0,
        }
        set_aside: list[Rollout] = []
        for _ in range(self.refill_rounds):
            if not flat:
                break
            exclude = {g[0].task_id for g in groups}
            new_tasks = self.refill(len(flat), exclude)[: len(flat)]
            if not new_tasks:
                break
            self.last_draws += [t.id for t in new_tasks]
            fresh = await self.run_all([t for t in new_tasks for _ in range(size)])
            stats["sampling/refill_rollouts"] += len(fresh)
            still_flat = flat[len(new_tasks) :]
            for index, start in zip(flat, range(0, len(fresh), size), strict=False):
                group = fresh[start : start + size]
                if flat_group(group):
                    set_aside += group
                    still_flat.append(index)
                else:
                    set_aside += groups[index]
                    groups[index] = group
                    stats["sampling/refilled_groups"] += 1
            flat = sorted(still_flat)
        for r in set_aside:
            r.dropped = True
        stats["sampling/zero_std_after"] = len(flat) / len(groups)
        return [r for g in groups for r in g], set_aside, stats

    async def run_all(self, tasks: list[Task]) -> list[Rollout]:
        from tqdm.auto import tqdm

        limit = asyncio.Semaphore(self.concurrency)
        bar = tqdm(total=len(tasks), desc="rollouts", disable=not self.progress, leave=False)

        async def one(task: Task) -> Rollout:
            async with limit:
                try:
                    rollout = Rollout.from_result(await self.rollout_fn(task))
                finally:
                    bar.update(1)
            if rollout.infra_error and not (rollout.prompt_ids and rollout.completion_ids):
                rollout.prompt_ids, rollout.completion_ids = self.stub_ids(task)
                rollout.logprobs = None
            if rollout.infra_error:  # what is saved is what training sees: no loss tokens
                rollout.env_mask = [0] * len(rollout.completion_ids)
            return rollout

        try:
            return list(await asyncio.gather(*(one(t) for t in tasks)))
        finally:
            bar.close()

    def stub_ids(self, task: Task) -> tuple[list[int], list[int]]:
        """Prompt and completion of a rollout that produced no tokens: the task's prompt and
        one masked EOS (TRL needs at least one completion token per row)."""
        return list(self.fallback_prompt_ids(task)), [self.eos_id]


def flat_group(group: Sequence[Rollout]) -> bool:
    """True when the scored rollouts of a group all have the same reward (zero advantage)."""
    scored = [r.reward for r in group if not r.infra_error and r.reward is not None]
    return len(scored) >= 2 and no_spread(scored)


def combine_sampling(per_process: list[dict[str, float]]) -> dict[str, float]:
    """Dynamic sampling numbers of all processes: shares averaged, counts summed."""
    reported = [s for s in per_process if s]
    if not reported:
        return {}
    counts = ("sampling/refilled_groups", "sampling/refill_rollouts")
    keys = sorted({k for s in reported for k in s})
    return {k: (sum if k in counts else _mean)(s[k] for s in reported if k in s) for k in keys}


REWARD_FUNCS = ("total", "tests", "judge")
"""The reward functions handed to TRL, in order; `REWARD_WEIGHTS` makes `total` the reward."""
REWARD_WEIGHTS = [1.0, 0.0, 0.0]


def reward_funcs() -> list[Callable[..., list[float | None]]]:
    """TRL reward functions over `reward_breakdowns` (see the module docstring)."""
    from tbrl_lib.rewards import reward_function

    return [reward_function(key) for key in REWARD_FUNCS]


def to_trl_output(rollouts: list[Rollout]) -> dict[str, list]:
    """The dict TRL expects back; infra-error rollouts get an all-zero env_mask."""
    have_logprobs = any(r.logprobs is not None for r in rollouts)
    out: dict[str, list] = {
        "prompt_ids": [],
        "completion_ids": [],
        "env_mask": [],
        "logprobs": [] if have_logprobs else None,
        "task_id": [],
        "reward_breakdowns": [],
        "infra_error": [],
        "termination": [],
    }
    for r in rollouts:
        if not (len(r.completion_ids) == len(r.env_mask) >= 1):
            raise ValueError(
                f"rollout of {r.task_id}: {len(r.completion_ids)} completion ids but "
                f"{len(r.env_mask)} env_mask entries (need equal and >= 1)"
            )
        out["prompt_ids"].append(r.prompt_ids)
        out["completion_ids"].append(r.completion_ids)
        out["env_mask"].append([0] * len(r.env_mask) if r.infra_error else r.env_mask)
        if have_logprobs:
            lps = r.logprobs if r.logprobs is not None else [0.0] * len(r.completion_ids)
            out["logprobs"].append(lps)
        out["task_id"].append(r.task_id)
        out["reward_breakdowns"].append(None if r.infra_error else r.breakdown)
        out["infra_error"].append(r.infra_error)
        out["termination"].append(r.termination)
    return out


def rollout_row(r: Rollout) -> dict[str, Any]:
    """What metrics and the curriculum need of a rollout (small: it crosses processes)."""
    return {
        "task_id": r.task_id,
        "reward": None if r.infra_error else r.reward,
        "infra_error": r.infra_error,
        "error": r.error,
        "breakdown": None if r.infra_error else r.breakdown,
        "turns": r.turns,
        "seconds": r.seconds,
        "completion_tokens": len(r.completion_ids),
        "assistant_tokens": sum(r.env_mask),
        "judge_cost_usd": r.judge_cost_usd,
        "termination": r.termination,
        "sandbox": r.sandbox,
    }


def rollout_metrics(rollouts: list[Rollout]) -> dict[str, float]:
    """Per-call numbers of `rollouts` (see `metrics_of_rows`)."""
    return metrics_of_rows([rollout_row(r) for r in rollouts])


def metrics_of_rows(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per-call numbers over `rollout_row`s. Reward metrics average the scored rollouts only
    and are absent when none was scored (a 0.0 there would read as a failing model)."""
    n = len(rows)
    ok = [r["breakdown"] for r in rows if r["breakdown"] is not None]
    metrics = {
        "rollout/count": float(n),
        "rollout/infra_error_rate": (n - len(ok)) / n if n else 0.0,
        "rollout/turns": _mean(r["turns"] for r in rows),
        "rollout/seconds": _mean(r["seconds"] for r in rows),
        "rollout/completion_tokens": _mean(r["completion_tokens"] for r in rows),
        "rollout/assistant_tokens": _mean(r["assistant_tokens"] for r in rows),
        "judge/cost_usd": sum(r["judge_cost_usd"] for r in rows),
    }
    if ok:
        judged = [b["judge"] for b in ok if b["judge"] is not None]
        metrics.update(
            {
                "reward/total": _mean(b["total"] for b in ok),
                "reward/tests": _mean(b["tests"] for b in ok),
                "reward/solved_rate": _mean(float(b["tests"] >= 1.0) for b in ok),
                "reward/judge_missing_rate": _mean(
                    float(b["judge"] is None and b["w_judge"] > 0) for b in ok
                ),
            }
        )
        if judged:
            metrics["reward/judge"] = _mean(judged)
    for reason, count in Counter(r["termination"] for r in rows).items():
        metrics[f"rollout/termination/{reason}"] = count / n
    keys = sorted({k for r in rows for k in r["sandbox"]})
    for key in keys:
        metrics[f"sandbox/{key}"] = _mean(r["sandbox"].get(key, 0.0) for r in rows)
    return metrics


def save_rollouts(rollouts: list[Rollout], path: Path) -> None:
    """One JSON line per rollout: ids, mask, reward, termination, details (messages etc.)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for r in rollouts:
            fh.write(json.dumps(asdict(r), default=str) + "\n")


def _mean(values) -> float:
    values = list(values)
    return float(sum(values) / len(values)) if values else 0.0
