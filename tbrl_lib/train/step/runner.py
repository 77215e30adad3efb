"""One GRPO step's rollouts: the seam between the trainer and `tbrl_lib.rollout`.

Three faces, one module:

- TRL's face, `RolloutFunc` (TRL's `rollout_func`) and `reward_funcs` (below);
- the runner, `StepRunner` (below), which any producer of rollouts shares (the
  synchronous `rollout_func`; the asynchronous worker, `pipeline/async_rollouts.py`);
- the records, `StepRollout` and its row, metrics and trajectory file (below).

What varies by run is a hook the runner calls, never code in it: the infra-rate stop
(`InfraHook`), dynamic sampling (`RefillHook`) and the gather across processes (`Gather`),
all three in `hooks.py`, and the engine-outage reruns (`OutageHook`,
`engine_outage.EngineWait`). The session hands them in one `RunnerSettings`; this module
names each by its Protocol and imports none of them (they work on its `StepRollout`s).

TRL's face
----------
The `rollout_func` TRL's GRPOTrainer calls: prompts in, multi-turn episodes out.

TRL hands `rollout_func(prompts, trainer)` this process's slice of the generation batch:
each dataset prompt already repeated `num_generations` times in a row (TRL's
`RepeatSampler` does that), so one rollout per prompt entry gives every task its group.
(TRL 1.15's docstring says the slice comes without duplication; it does not, and
tests/train/test_step_runner.py pins what it actually does.) `RolloutFunc`:

1. maps each prompt back to its `Task` (`TaskIndex`: dataset rows carry the task JSON, so a
   training node needs nothing but the parquet file);
2. runs the step's rollouts through the session's `StepRunner` (the runner, below: the
   rollouts, dynamic sampling, saving, the infra-rate stop, the curriculum's counts, metrics)
   and appends its metrics to TRL's own;
3. returns `prompt_ids` (the first prompt), `completion_ids` (everything after it: assistant
   tokens with env_mask 1, observations and chat scaffolding with env_mask 0, exactly as
   generated), `env_mask`, `logprobs`, and `reward_breakdowns`, which the reward functions
   (`tbrl_lib.rewards.reward_function`) hand back to TRL: `tbrl_total` (TRL weight 1) is the
   reward; one function per reward part (`tbrl_tests`, `tbrl_judge`, ...; TRL weight 0) is
   logged beside it (`reward_funcs`). `tbrl_total` also
   hands TRL's completions table (`grpo.log_completions`) each rollout's `TABLE_COLUMNS`
   (task id, solved, turns, termination) beside the episode text and the reward parts.

An infra-error rollout's reward is None, which TRL turns into a zero advantage and leaves
out of the group baseline, and its env_mask is all zeros, so no token of it enters the loss.

Log-probs: TRL needs the sampler's log-probs only for vLLM importance-sampling correction
(on by default with vLLM) and off-policy masking. We return them when the backend gives them
(0.0 at env_mask=0 positions, which the mask removes), else None: TRL accepts None when
`use_vllm` is off, which is the HF/CPU path (the HF backend gives them; the asynchronous
pipeline's importance correction, `async_pipeline.py`, uses them).

The runner
----------
Everything below the trainer's interface lives here, so any producer of rollouts (TRL's
synchronous `rollout_func`, `RolloutFunc`; an asynchronous worker) shares it:

1. every task is one `tbrl_lib.rollout.run_rollout` (sandbox, episode, verifier + judge, the
   mission's reward: the one rollout evaluation and validation run), by `policy`, all on one
   asyncio loop, `concurrency` at a time;
2. when rollouts come back as infra errors and an engine stopped answering, the run waits for
   it, bounded, and reruns them once it is back, or stops resumably (the outage hook);
3. a rollout that produced no tokens is given a stub (the task's first prompt and one masked
   EOS: TRL needs a completion token per row), and every infra-error rollout gets an
   all-zero env mask, so what is saved is what training sees;
4. dynamic sampling refills flat groups (the refill hook);
5. the step's rollouts are saved (`step-…-call-…[-rank<i>].jsonl`), a small row per rollout
   is gathered from every process (the gather hook), and from those rows alone, identical
   on every process, the infra-rate stop (the infra hook) counts and may stop the run, the
   curriculum counts each group, and the step's metrics are made.

`step` is `generate` (1-4) then `record` (5). The asynchronous worker (`async_rollouts.py`)
runs 1-3 per episode through `run_all`, in its own thread; its pipeline does dynamic sampling
at take time and calls `record` in the trainer's thread (`async_pipeline.py`).

Infra errors never teach the model it failed (masked), and any other exception from a
rollout is a bug that stops training: never masked. Left out: the TRL output format
(TRL's face, above), the order tasks come in (the curriculum's sampler).

The records
-----------
What training keeps of a rollout: the `StepRollout` record, its small row, the step's metrics,
and the trajectory file.

`StepRollout.from_result` turns `tbrl_lib.rollout.run_rollout`'s result into the record training
sees: exact ids and env mask, the reward (None when masked), the breakdown, termination and
timings. A rollout with no tokens to train on (the episode ended before its first reply, or
overran its limit) is masked like an infra error. `rollout_row` is the part that crosses
processes; `metrics_of_rows` makes the step's numbers from rows (all processes' rows, so
every process logs the same):

    rollout/…   count, infra_error_rate, turns, seconds, completion_tokens, assistant_tokens,
                termination/<reason> shares
    reward/…    total, each part (`tests`, `judge`, ...: `rewards.reward.step_metrics`, a
                part absent when no rollout has a score for it: a 0.0 there would read as a
                failing model) and `<part>_missing_rate`, solved_rate (share whose tests all
                passed: `RolloutResult.resolved`, as `eval/solve_rate` counts)
    judge/…     cost_usd of the step's rollouts
    sandbox/…   per-rollout container numbers (startup_seconds, commands, ...)

`save_rollouts` writes one JSON line per rollout (ids, mask, reward, messages, test outcomes).
Left out: the `sampling/…` numbers (dynamic sampling's, `hooks.py`) and TRL's own (under
`train/`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from tbrl_lib.aio import run_sync
from tbrl_lib.policies.base import Policy
from tbrl_lib.rewards import RewardConfig, reward_function
from tbrl_lib.rewards.reward import step_metrics
from tbrl_lib.rollout import AGENT_TIMEOUT, RolloutConfig, RolloutResult, run_rollout
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.step.curriculum import Curriculum

# The records.


@dataclass
class StepRollout:
    """One episode as training sees it: token ids, mask, and its reward breakdown."""

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float] | None
    reward: float | None
    """The combined reward (`RewardBreakdown.total`); None for an infra error (masked)."""
    breakdown: dict[str, Any] | None = None
    """`RewardBreakdown.to_dict()`: each part's score and weight, notes; None when masked."""
    solved: bool = False
    """Every test passed (`RolloutResult.resolved`: what `eval/solve_rate` counts); the
    curriculum's notion of solved, never a reward threshold."""
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
    def from_result(cls, result: RolloutResult) -> StepRollout:
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
        error = result.infra_error
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
            breakdown=details["reward"],  # RewardBreakdown.to_dict(), made once above
            solved=result.resolved,
            **common,
        )


def rollout_row(r: StepRollout) -> dict[str, Any]:
    """What metrics and the curriculum need of a rollout (small: it crosses processes)."""
    return {
        "task_id": r.task_id,
        "reward": None if r.infra_error else r.reward,
        "infra_error": r.infra_error,
        "error": r.error,
        "breakdown": None if r.infra_error else r.breakdown,
        "solved": r.solved and not r.infra_error,
        "turns": r.turns,
        "seconds": r.seconds,
        "completion_tokens": len(r.completion_ids),
        "assistant_tokens": sum(r.env_mask),
        "judge_cost_usd": r.judge_cost_usd,
        "termination": r.termination,
        "sandbox": r.sandbox,
    }


def rollout_metrics(rollouts: list[StepRollout]) -> dict[str, float]:
    """Per-call numbers of `rollouts` (see `metrics_of_rows`)."""
    return metrics_of_rows([rollout_row(r) for r in rollouts])


def metrics_of_rows(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per-call numbers over `rollout_row`s (see the module docstring)."""
    n = len(rows)
    scored = [r for r in rows if r["breakdown"] is not None]
    ok = [r["breakdown"] for r in scored]
    metrics = {
        "rollout/count": float(n),
        "rollout/infra_error_rate": (n - len(ok)) / n if n else 0.0,
        "rollout/turns": mean(r["turns"] for r in rows),
        "rollout/seconds": mean(r["seconds"] for r in rows),
        "rollout/completion_tokens": mean(r["completion_tokens"] for r in rows),
        "rollout/assistant_tokens": mean(r["assistant_tokens"] for r in rows),
        "judge/cost_usd": sum(r["judge_cost_usd"] for r in rows),
    }
    if ok:
        metrics.update(step_metrics(ok))
        metrics["reward/solved_rate"] = mean(float(r["solved"]) for r in scored)
    for reason, count in Counter(r["termination"] for r in rows).items():
        metrics[f"rollout/termination/{reason}"] = count / n
    keys = sorted({k for r in rows for k in r["sandbox"]})
    for key in keys:
        metrics[f"sandbox/{key}"] = mean(r["sandbox"].get(key, 0.0) for r in rows)
    return metrics


def combine_sampling(per_process: list[dict[str, float]]) -> dict[str, float]:
    """Dynamic sampling numbers of all processes: shares averaged, counts summed."""
    reported = [s for s in per_process if s]
    if not reported:
        return {}
    counts = ("sampling/refilled_groups", "sampling/refill_rollouts")
    keys = sorted({k for s in reported for k in s})
    return {k: (sum if k in counts else mean)(s[k] for s in reported if k in s) for k in keys}


def save_rollouts(rollouts: list[StepRollout], path: Path) -> None:
    """One JSON line per rollout: ids, mask, reward, termination, details (messages etc.)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for r in rollouts:
            fh.write(json.dumps(asdict(r), default=str) + "\n")


def mean(values) -> float:
    """The mean of `values`, 0.0 for none."""
    values = list(values)
    return float(sum(values) / len(values)) if values else 0.0


# The runner.

RunRollout = Callable[[Task, Policy, RolloutConfig, Any], Awaitable[RolloutResult]]
"""`run_rollout`'s shape: `async (task, policy, config, judge) -> RolloutResult`."""

OUTAGE_RERUNS = 2
"""Most reruns of a step's rollouts that engine outages failed (an engine that keeps
restarting: what still fails stays an infra error, masked)."""


@dataclass
class Generated:
    """One step's rollouts before they are saved and counted (`StepRunner.generate`)."""

    rollouts: list[StepRollout]
    """The batch to train on, one per task asked for, in order (refilled groups in place)."""
    dropped: list[StepRollout]
    """Flat groups dynamic sampling set aside (saved and counted, not trained on)."""
    sampling: dict[str, float]
    """This process's `sampling/...` numbers."""
    draws: list[str]
    """Tasks the refill drew (the curriculum's shared counts take them in `record`)."""


@dataclass
class StepResult:
    """What one step's rollouts give the trainer."""

    rollouts: list[StepRollout]
    """The batch to train on, one per task asked for, in order (refilled groups in place)."""
    metrics: dict[str, float]
    """`rollout/`, `reward/`, `judge/`, `sandbox/`, `sampling/` numbers over every process."""


class OutageHook(Protocol):
    """Waits out an engine outage (`engine_outage.EngineWait`)."""

    async def after_infra_errors(self, why: str) -> bool:
        """True when an engine was down and is back (rerun what failed), else False."""
        ...


class InfraHook(Protocol):
    """Counts every process's rows and may stop the run (`hooks.InfraErrorGuard`)."""

    total: int
    errors: list[str]

    def record(self, rows: list[dict[str, Any]]) -> None: ...


class RefillHook(Protocol):
    """Refills flat groups (`hooks.DynamicSampling`)."""

    last_draws: list[str]
    """Tasks the last refill drew."""

    async def refill(
        self,
        rollouts: list[StepRollout],
        run_all: Callable[[list[Task]], Awaitable[list[StepRollout]]],
    ) -> tuple[list[StepRollout], list[StepRollout], dict[str, float]]:
        """(kept, set aside, this process's `sampling/...` numbers)."""
        ...


Gather = Callable[[dict[str, Any]], list[dict[str, Any]]]
"""One report per process from this process's (`hooks.gather_across`)."""


@dataclass
class RunnerSettings:
    """What a `StepRunner` is made of: who plays, how each rollout runs, and the hooks."""

    policy: Policy | None
    """Plays every rollout (`run_all` may be handed another)."""
    rollout: RolloutConfig
    """Sandbox, episode and reward settings of every rollout."""
    judge: Any | None
    """The reward's judge (`rewards.judge_for`), None when there is none."""
    curriculum: Curriculum
    """Counts each group (every process's) and picks the refill tasks."""
    concurrency: int
    """Rollouts in flight at once."""
    stub_prompt_ids: Callable[[Task], list[int]]
    """A task's first prompt ids: the stub of a rollout that produced no tokens."""
    eos_id: int
    """The stub's one masked completion token."""
    infra: InfraHook
    """The infra-rate stop (`hooks.InfraErrorGuard`)."""
    gather: Gather
    """Every process's report of a step (`hooks.gather_across`; one process: itself)."""
    sampling: RefillHook | None = None
    """Dynamic sampling's refill of flat groups; None: flat groups stay."""
    outage: OutageHook | None = None
    """Waits out an engine outage and reruns what it failed; None: no reruns."""
    trajectories_dir: Path | None = None
    """Where each step's rollouts are saved; None: not saved."""
    trajectories_suffix: str = ""
    """Ends each trajectory file's name: `-rank<i>` when several processes train
    (`hooks.rank_suffix`), so each writes its own."""
    progress: bool = True
    """A progress bar over each step's rollouts."""
    rollout_fn: RunRollout = run_rollout
    """Runs one rollout (`run_rollout`; tests script it)."""


class StepRunner:
    """Runs, refills, saves and counts one step's rollouts (see the module docstring)."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self.calls = 0
        """Steps run so far (names the trajectory files; a resumed run continues it)."""

    def step(self, tasks: list[Task], step: int | None = None) -> StepResult:
        """One rollout per task (TRL repeats each task `num_generations` times in a row)."""
        return self.record(self.generate(tasks), step)

    def generate(self, tasks: list[Task]) -> Generated:
        """The rollouts of `tasks` by the runner's policy, refilled; nothing is saved or
        counted yet (`record`)."""
        rollouts = run_sync(self.run_all(tasks))
        dropped, sampling, draws = [], {}, []
        if self.settings.sampling is not None:
            rollouts, dropped, sampling = run_sync(
                self.settings.sampling.refill(rollouts, self.run_all)
            )
            draws = list(self.settings.sampling.last_draws)
        return Generated(rollouts, dropped, sampling, draws)

    def record(self, generated: Generated, step: int | None = None) -> StepResult:
        """Save `generated`, count it (infra stop, curriculum) and make the step's metrics."""
        rollouts, dropped = generated.rollouts, generated.dropped
        self.calls += 1
        if self.settings.trajectories_dir is not None:
            name = f"step-{self.calls if step is None else step:05d}-call-{self.calls:04d}"
            name += self.settings.trajectories_suffix
            save_rollouts(rollouts + dropped, self.settings.trajectories_dir / f"{name}.jsonl")
        # Every decision below uses all processes' rollouts, so every process takes the same one.
        reports = self.settings.gather(
            {
                "kept": [rollout_row(r) for r in rollouts],
                "dropped": [rollout_row(r) for r in dropped],
                "sampling": generated.sampling,
                "draws": generated.draws,
            }
        )
        kept = [row for report in reports for row in report["kept"]]
        seen = [row for report in reports for row in report["kept"] + report["dropped"]]
        self.settings.infra.record(seen)
        self.settings.curriculum.record_rollouts(
            [r["task_id"] for r in seen], [r["reward"] for r in seen], [r["solved"] for r in seen]
        )
        self.settings.curriculum.commit_refills([t for report in reports for t in report["draws"]])
        metrics = {**metrics_of_rows(kept), **combine_sampling([r["sampling"] for r in reports])}
        return StepResult(rollouts, metrics)

    async def run_all(
        self, tasks: list[Task], policy: Policy | None = None, progress: bool | None = None
    ) -> list[StepRollout]:
        """One rollout per task by `policy` (default: the runner's), in order, `concurrency`
        at a time; those an engine outage failed are rerun once the engine is back (up to
        `OUTAGE_RERUNS` times). `progress`: a bar (default: the runner's setting)."""
        rollouts = await self.run_each(tasks, policy, progress)
        for attempt in range(OUTAGE_RERUNS + 1):
            failed = [i for i, r in enumerate(rollouts) if r.infra_error]
            if not failed or self.settings.outage is None:
                break
            why = rollouts[failed[0]].error or "an infra error"
            if not await self.settings.outage.after_infra_errors(why):
                break  # every engine answers: these infra errors were no outage
            if attempt == OUTAGE_RERUNS:
                break
            tqdm.write(f"tbrl train: rerunning the {len(failed)} rollouts the outage failed")
            again = await self.run_each([tasks[i] for i in failed], policy, progress)
            for i, rollout in zip(failed, again, strict=True):
                rollouts[i] = rollout
        return rollouts

    async def run_each(
        self, tasks: list[Task], policy: Policy | None = None, progress: bool | None = None
    ) -> list[StepRollout]:
        """One rollout per task, in order, `concurrency` at a time (no outage handling)."""
        policy = policy or self.settings.policy
        limit = asyncio.Semaphore(self.settings.concurrency)
        shown = self.settings.progress if progress is None else progress
        bar = tqdm(total=len(tasks), desc="rollouts", disable=not shown, leave=False)

        async def one(task: Task) -> StepRollout:
            async with limit:
                try:
                    result = await self.settings.rollout_fn(
                        task, policy, self.settings.rollout, self.settings.judge
                    )
                finally:
                    bar.update(1)
            rollout = StepRollout.from_result(result)
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
        return list(self.settings.stub_prompt_ids(task)), [self.settings.eos_id]

    def state_dict(self) -> dict[str, Any]:
        """Counters a resumed run continues (trajectory file names, the infra error rate)."""
        return {
            "calls": self.calls,
            "total": self.settings.infra.total,
            "infra_errors": self.settings.infra.errors,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls, self.settings.infra.total = state["calls"], state["total"]
        self.settings.infra.errors = list(state["infra_errors"])


# TRL's face.


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

    def __init__(self, index: TaskIndex, runner: StepRunner) -> None:
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


TABLE_COLUMNS = ("task_id", "solved", "turns", "termination")
"""Per-rollout fields `to_trl_output` returns that TRL's completions table shows."""


def reward_funcs(
    reward: RewardConfig,
) -> tuple[list[Callable[..., list[float | None]]], list[float]]:
    """TRL's reward functions over `reward_breakdowns`, and TRL's weights of them (its
    `reward_weights`): `tbrl_total` with TRL weight 1 is the reward TRL's advantages come
    from; one function per part of `reward.weights` with TRL weight 0 is logged beside it.
    These are TRL's weights of its functions, not the reward's weights of its parts
    (`rollout.reward.weights`), which are already inside `total`."""
    funcs = [with_table_columns(reward_function("total"))]
    funcs += [reward_function(name) for name in reward.weights]
    return funcs, [1.0] + [0.0] * len(reward.weights)


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


def to_trl_output(rollouts: list[StepRollout]) -> dict[str, list]:
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
