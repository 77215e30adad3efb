"""The `rollout_func` TRL's GRPOTrainer calls: prompts in, multi-turn episodes out.

TRL hands `rollout_func(prompts, trainer)` this process's slice of the generation batch:
each dataset prompt already repeated `num_generations` times in a row (TRL's
`RepeatSampler` does that), so one rollout per prompt entry gives every task its group.
(TRL 1.15's docstring says the slice comes without duplication; it does not, and
tests/train/test_trl_rollouts.py pins what it actually does.) `RolloutFunc`:

1. maps each prompt back to its `Task` (`TaskIndex`: dataset rows carry the task JSON, so a
   training node needs nothing but the parquet file);
2. runs the step's rollouts through the session's `RolloutRunner` (`rollout_runner.py`: the
   rollouts, dynamic sampling, saving, the infra-rate stop, the curriculum's counts, metrics)
   and appends its metrics to TRL's own;
3. returns `prompt_ids` (the first prompt), `completion_ids` (everything after it: assistant
   tokens with env_mask 1, observations and chat scaffolding with env_mask 0, exactly as
   generated), `env_mask`, `logprobs`, and `reward_breakdowns`, which the reward functions
   (`tbrl_lib.rewards.reward_function`) hand back to TRL: `tbrl_total` (weight 1) is the
   reward; `tbrl_tests` and `tbrl_judge` (weight 0) are logged beside it. `tbrl_total` also
   hands TRL's completions table (`grpo.log_completions`) each rollout's `TABLE_COLUMNS`
   (task id, solved, turns, termination) beside the episode text and the reward parts.

An infra-error rollout's reward is None, which TRL turns into a zero advantage and leaves
out of the group baseline, and its env_mask is all zeros, so no token of it enters the loss.

Log-probs: TRL needs the sampler's log-probs only for vLLM importance-sampling correction
(on by default with vLLM) and off-policy masking. We return them when the backend gives them
(0.0 at env_mask=0 positions, which the mask removes), else None: TRL accepts None when
`use_vllm` is off, which is the HF/CPU path (the HF backend gives them; the asynchronous
pipeline's importance correction, `async_pipeline.py`, uses them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from tbrl_lib.rewards import reward_function
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.rollouts.rollout_records import Rollout
from tbrl_lib.train.rollouts.rollout_runner import RolloutRunner


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


class RolloutFunc:
    """TRL's `rollout_func`: this process's prompts -> `runner`'s rollouts in TRL's format."""

    def __init__(self, index: TaskIndex, runner: RolloutRunner) -> None:
        self.index, self.runner = index, runner

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        tasks = [self.index.task_for(p) for p in prompts]
        step = getattr(getattr(trainer, "state", None), "global_step", None)
        done = self.runner.step(tasks, step)
        trainer_metrics = getattr(trainer, "_metrics", None)
        if trainer_metrics is not None:
            for name, value in done.metrics.items():
                trainer_metrics["train"][name].append(value)
        return to_trl_output(done.rollouts)


REWARD_FUNCS = ("total", "tests", "judge")
"""The reward functions handed to TRL, in order; `REWARD_WEIGHTS` makes `total` the reward."""
REWARD_WEIGHTS = [1.0, 0.0, 0.0]


TABLE_COLUMNS = ("task_id", "solved", "turns", "termination")
"""Per-rollout fields `to_trl_output` returns that TRL's completions table shows."""


def reward_funcs() -> list[Callable[..., list[float | None]]]:
    """TRL reward functions over `reward_breakdowns` (see the module docstring)."""
    return [with_table_columns(reward_function(REWARD_FUNCS[0]))] + [
        reward_function(key) for key in REWARD_FUNCS[1:]
    ]


def with_table_columns(func: Callable[..., list[float | None]]) -> Callable[..., Any]:
    """`func`, also handing TRL's `log_extra` (the completions table) the `TABLE_COLUMNS`."""

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        log_extra = kwargs.get("log_extra")
        if log_extra is not None:
            for column in TABLE_COLUMNS:
                if column in kwargs:
                    log_extra(column, list(kwargs[column]))
        return func(completions, **kwargs)

    reward.__name__ = func.__name__
    return reward


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
        "solved": [],
        "turns": [],
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
        out["solved"].append(r.solved and not r.infra_error)
        out["turns"].append(r.turns)
    return out
