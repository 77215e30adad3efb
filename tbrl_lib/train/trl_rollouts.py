"""The `rollout_func` TRL's GRPOTrainer calls: prompts in, multi-turn episodes out.

TRL hands `rollout_func(prompts, trainer)` this process's slice of the generation batch:
each dataset prompt already repeated `num_generations` times in a row (TRL's
`RepeatSampler` does that), so one rollout per prompt entry gives every task its group.
(TRL 1.15's docstring says the slice comes without duplication; it does not, and
tests/train/test_rollout.py pins what it actually does.)
For each entry `RolloutRunner`:

1. maps the prompt back to its `Task` (`TaskIndex`: dataset rows carry the task JSON, so a
   training node needs nothing but the parquet file);
2. runs the episode in its own sandbox, all entries concurrently on one asyncio loop
   (`sandbox_concurrency` at a time), with a policy that samples from the trainer's
   current weights (see `tbrl_lib.train.generation`);
3. verifies with the same `verify` the evaluation uses, and returns
   `prompt_ids` (the first prompt), `completion_ids` (everything after it: assistant tokens
   with env_mask 1, observations and chat scaffolding with env_mask 0, exactly as generated),
   `env_mask`, `logprobs`, and reward fields that `verifier_reward` hands back to TRL.

Infra errors (sandbox or model backend failed) never teach the model it failed: the reward
is None, which TRL turns into a zero advantage and leaves out of the group baseline, and
the env_mask is all zeros, so no token of that rollout enters the loss.

Log-probs: TRL needs the sampler's log-probs only for vLLM importance-sampling correction
(on by default with vLLM) and off-policy masking. We return them when the backend gives them
(0.0 at env_mask=0 positions, which the mask removes), else None: TRL accepts None when
`use_vllm` is off, which is the HF/CPU path.

Metrics (appended to TRL's own, averaged per logging step): `rollout/…` (turns, tokens,
seconds, infra error rate, termination shares), `reward/…` (test score, solved share),
`sandbox/…` (startup, commands, command seconds).
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
from tbrl_lib.tasks.model import Task


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
                raise ValueError(f"dataset row {number} lacks a 'prompt' or 'task' column; write the "
                                 "dataset with tbrl_lib.tasks (parquet format) so each row carries both")
            task = row["task"] if isinstance(row["task"], Task) else Task.model_validate_json(row["task"])
            key = prompt_key(row["prompt"])
            if key in owners and owners[key] != task.id:
                raise ValueError(f"tasks {owners[key]!r} and {task.id!r} have identical prompts; rollouts "
                                 "could not tell them apart: drop or reword one of them")
            owners[key] = task.id
            self.tasks[key] = task

    def __len__(self) -> int:
        return len(self.tasks)

    def task_for(self, prompt: Sequence[dict[str, Any]] | str) -> Task:
        try:
            return self.tasks[prompt_key(prompt)]
        except KeyError:
            text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
            raise KeyError(f"no task in the training set has this prompt (last message starts "
                           f"{text[:80]!r}); was the dataset built with the same system prompt?") from None


@dataclass
class Rollout:
    """One episode as training sees it."""

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float] | None
    reward: float | None
    """Verifier score in [0, 1]; None for an infra error (masked out of training)."""
    infra_error: bool = False
    error: str | None = None
    termination: str = "unknown"
    turns: int = 0
    seconds: float = 0.0
    sandbox: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    """Test outcomes and anything else worth keeping with the trajectory."""


EpisodeFn = Callable[[Task], Any]
"""`async (task) -> Rollout`: runs one episode end to end (see `run_task_episode`)."""


class RolloutRunner:
    """Callable as TRL's `rollout_func`; runs episodes with `episode_fn` and shapes the output."""

    def __init__(self, index: TaskIndex, episode_fn: EpisodeFn, concurrency: int,
                 fallback_prompt_ids: Callable[[Task], list[int]], eos_id: int,
                 trajectories_dir: Path | None = None,
                 on_rollouts: Callable[[list[str], list[float | None]], None] | None = None,
                 progress: bool = True) -> None:
        self.index, self.episode_fn, self.concurrency = index, episode_fn, concurrency
        self.fallback_prompt_ids, self.eos_id = fallback_prompt_ids, eos_id
        self.trajectories_dir, self.on_rollouts, self.progress = trajectories_dir, on_rollouts, progress
        self.calls = 0

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        tasks = [self.index.task_for(p) for p in prompts]
        rollouts = run_sync(self.run_all(tasks))
        self.calls += 1
        step = getattr(getattr(trainer, "state", None), "global_step", self.calls)
        if self.trajectories_dir is not None:
            save_rollouts(rollouts, self.trajectories_dir / f"step-{step:05d}-call-{self.calls:04d}.jsonl")
        metrics = rollout_metrics(rollouts)
        trainer_metrics = getattr(trainer, "_metrics", None)
        if trainer_metrics is not None:
            for name, value in metrics.items():
                trainer_metrics["train"][name].append(value)
        if self.on_rollouts is not None:
            task_ids, rewards = gather_results(rollouts, trainer)
            self.on_rollouts(task_ids, rewards)
        return to_trl_output(rollouts)

    async def run_all(self, tasks: list[Task]) -> list[Rollout]:
        from tqdm.auto import tqdm

        limit = asyncio.Semaphore(self.concurrency)
        bar = tqdm(total=len(tasks), desc="rollouts", disable=not self.progress, leave=False)

        async def one(task: Task) -> Rollout:
            async with limit:
                try:
                    rollout = await self.episode_fn(task)
                except Exception as exc:  # noqa: BLE001 - any failure of the machinery is an infra error
                    rollout = self.infra_failure(task, f"{type(exc).__name__}: {exc}")
                finally:
                    bar.update(1)
            if rollout.infra_error and not (rollout.prompt_ids and rollout.completion_ids):
                stub = self.infra_failure(task, rollout.error or "no tokens")
                rollout.prompt_ids, rollout.completion_ids, rollout.env_mask = (
                    stub.prompt_ids, stub.completion_ids, stub.env_mask)
                rollout.logprobs = None
            if rollout.infra_error:  # what is saved is what training sees: no loss tokens
                rollout.env_mask = [0] * len(rollout.completion_ids)
            return rollout

        try:
            return list(await asyncio.gather(*(one(t) for t in tasks)))
        finally:
            bar.close()

    def infra_failure(self, task: Task, error: str) -> Rollout:
        """A rollout that failed before producing tokens: one masked EOS, no reward."""
        try:
            prompt = self.fallback_prompt_ids(task)
        except Exception:  # noqa: BLE001 - a rollout must come back whatever happened
            prompt = [self.eos_id]
        return Rollout(task.id, prompt, [self.eos_id], [0], None, reward=None, infra_error=True,
                       error=error, termination="infra_error")


def gather_results(rollouts: list[Rollout], trainer: Any) -> tuple[list[str], list[float | None]]:
    """(task id, reward or None) of every rollout on every process, in rank order, so each
    rank's curriculum sees the same groups and samples the same tasks next."""
    pairs = [(r.task_id, None if r.infra_error else r.reward) for r in rollouts]
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None and accelerator.num_processes > 1:
        from accelerate.utils import gather_object

        pairs = gather_object(pairs)
    return [p[0] for p in pairs], [p[1] for p in pairs]


def to_trl_output(rollouts: list[Rollout]) -> dict[str, list]:
    """The dict TRL expects back; infra-error rollouts get an all-zero env_mask."""
    have_logprobs = any(r.logprobs is not None for r in rollouts)
    out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "env_mask": [],
                            "logprobs": [] if have_logprobs else None,
                            "task_id": [], "tbrl_reward": [], "infra_error": [], "termination": []}
    for r in rollouts:
        if not (len(r.completion_ids) == len(r.env_mask) >= 1):
            raise ValueError(f"rollout of {r.task_id}: {len(r.completion_ids)} completion ids but "
                             f"{len(r.env_mask)} env_mask entries (need equal and >= 1)")
        out["prompt_ids"].append(r.prompt_ids)
        out["completion_ids"].append(r.completion_ids)
        out["env_mask"].append([0] * len(r.env_mask) if r.infra_error else r.env_mask)
        if have_logprobs:
            lps = r.logprobs if r.logprobs is not None else [0.0] * len(r.completion_ids)
            out["logprobs"].append(lps)
        out["task_id"].append(r.task_id)
        out["tbrl_reward"].append(None if r.infra_error else r.reward)
        out["infra_error"].append(r.infra_error)
        out["termination"].append(r.termination)
    return out


def verifier_reward(completions: list, tbrl_reward: list[float | None], **kwargs: Any) -> list[float | None]:
    """TRL reward function: the verifier's score from the rollout; None (masked) on infra error."""
    if len(tbrl_reward) != len(completions):
        raise ValueError(f"{len(tbrl_reward)} rewards for {len(completions)} completions")
    return list(tbrl_reward)


def rollout_metrics(rollouts: list[Rollout]) -> dict[str, float]:
    n = len(rollouts)
    ok = [r for r in rollouts if not r.infra_error]
    metrics = {
        "rollout/count": float(n),
        "rollout/infra_error_rate": (n - len(ok)) / n if n else 0.0,
        "rollout/turns": _mean(r.turns for r in rollouts),
        "rollout/seconds": _mean(r.seconds for r in rollouts),
        "rollout/completion_tokens": _mean(len(r.completion_ids) for r in rollouts),
        "rollout/assistant_tokens": _mean(sum(r.env_mask) for r in rollouts),
        "reward/tests_score": _mean(r.reward for r in ok) if ok else 0.0,
        "reward/solved_rate": _mean(float((r.reward or 0) >= 1.0) for r in ok) if ok else 0.0,
    }
    for reason, count in Counter(r.termination for r in rollouts).items():
        metrics[f"rollout/termination/{reason}"] = count / n
    keys = sorted({k for r in rollouts for k in r.sandbox})
    for key in keys:
        metrics[f"sandbox/{key}"] = _mean(r.sandbox.get(key, 0.0) for r in rollouts)
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

