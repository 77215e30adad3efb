"""Streaming rollouts about one step ahead of training (`grpo.async_rollouts`).

Why not TRL's `AsyncGRPOTrainer` (TRL 1.15) here: it takes the model only as a name or path
and loads it itself with `attn_implementation="kernels-community/flash-attn3"`, hard-coded (its
padding-free packing needs FlashAttention's variable-length kernels, which SDPA/eager lack):
that needs the `kernels` package (not installed) and a Hopper GPU, so on this CPU machine the
constructor fails before training (tried: an injected worker and a no-op transfer, `use_cpu`,
`token_budget=0`). The rest would not stop it: its vLLM client is built on rank 0 regardless but
only called when `token_budget` is unset or a PEFT model syncs without an injected transfer;
NCCL lives only in the default `WeightTransferClient`; FSDP2 (DTensor) is handled, not required.
It is also its own trainer (PPO-clip on advantages its worker computes, no reference model, no
loss types, no tbrl curriculum sampler). Its protocol shapes are kept (`async_rollouts.py`);
the pipeline below runs on the synchronous `SessionTrainer`, on CPU and on GPUs alike, so an
async run keeps everything a synchronous one has (the loss types, the reference model and KL,
ZeRO-3, the curriculum, dynamic sampling, resume).

`AheadRolloutFunc` is TRL's `rollout_func` for an async run. The worker
(`async_rollouts.RolloutWorker`) streams: it keeps `launch.sandbox_concurrency` episodes
running, from a queue of groups this function fills, and hands over whole groups as they
finish. At the call of step s (TRL hands it the prompts of step s) it

1. pushes the trainer's weights (version s: optimizer steps taken) to the worker's generator
   (`LocalWeightTransfer` into an in-process copy with `generation_backend: hf`,
   `ServerWeightSync` into the vLLM server with `vllm-server`), between two generation calls,
   while the episodes in progress go on;
2. queues step s's groups, which step s+1 will mostly train on (at the first call, or the
   first after `--resume`, twice: once for this step; none at the last step), so the worker
   always has about one step of work ahead, and no slot idles on a batch's long tail;
3. takes the first groups to finish, as many as the step needs, whichever step queued them:
   a group generated more than `max_staleness` optimizer steps ago (its oldest episode's
   version) is dropped, counted in `async/stale_dropped_rollouts` and queued again; with
   dynamic sampling, a flat group (all rewards equal) is set aside and replaced by a group of
   a task the curriculum draws (`Curriculum.refill_ids`, as in the synchronous refill), up to
   `refill_rounds` per group the step needs, after which flat groups are kept;
4. records the taken batch (`StepRunner.record`: saved, infra stop, curriculum, metrics)
   in the trainer's thread and returns it in TRL's format.

Pushing before queueing keeps the lag at one step: step s's groups start with version s and
are trained at step s+1. So the trained groups are the first to finish, mostly queued one
step earlier; the first step's tasks are trained twice; the curriculum sees rewards a step
later. A long episode no longer holds the step: its group is trained at
a later step, or dropped as stale. Fast-finishing groups are trained first, a bias bounded by
`max_staleness` (a slow group is at most that late, or regenerated). The importance-sampling
correction for the lag is `importance_weights` (applied by `async_trainer.py`): TRL's own
truncated IS (`vllm_importance_sampling_mode` `token_truncate` / `sequence_truncate`, cap
`vllm_importance_sampling_clip_max`), which TRL applies only on its vLLM path; it is per
token, with the log-prob each token was sampled with, so an episode that spans a weight
update is corrected exactly.

Several processes: every rank runs its own worker on its share of the step's prompts and
records what it took; `record` gathers every rank's rollouts, so each is counted once. The
weight push is the trainer's thread's, on every rank, at the start of every call (the server
sync gathers ZeRO-3 shards, a collective); the worker threads run no collective.

Resume: the worker's queue is dropped, not saved. A checkpoint holds the model, the
optimizer, TRL's step (= the model version) and tbrl's state (curriculum, sampler, runner
counters); the resumed run's first call queues its step twice and the stream starts again.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from tbrl_lib.train.model.trainer_policy import TrainerPolicy
from tbrl_lib.train.pipeline.async_rollouts import (
    LocalWeightTransfer,
    QueuedRollout,
    RolloutWorker,
    group_version,
    is_stale,
    policy_copy,
)
from tbrl_lib.train.step.hooks import flat_group
from tbrl_lib.train.step.runner import Generated, StepRunner, TaskIndex, to_trl_output


class ServerWeightSync:
    """`WeightTransferProtocol`'s role on GPUs: TRL's own push of the trainer's weights into
    the vLLM server (`trainer.vllm_generation.sync_weights()`: ZeRO-3/FSDP2 shards gathered on
    every rank, LoRA merged, NCCL broadcast to the server, which applies them between two
    forward passes). Called in the trainer's thread on every rank."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.sent = 0

    def sync(self) -> None:
        self.trainer.vllm_generation.sync_weights()
        self.sent += 1


class AheadRolloutFunc:
    """TRL's `rollout_func` over a streaming worker (see the module docstring)."""

    def __init__(
        self,
        index: TaskIndex,
        runner: StepRunner,
        worker_policy: TrainerPolicy,
        group_size: int,
        max_staleness: int,
        stale_after_s: float,
        concurrency: int,
        refill_rounds: int = 0,
    ) -> None:
        self.index, self.runner = index, runner
        self.by_id = {t.id: t for t in index.tasks.values()}
        self.worker_policy, self.max_staleness = worker_policy, max_staleness
        self.group_size, self.stale_after_s = group_size, stale_after_s
        self.refill_rounds = refill_rounds
        """Flat groups replaced per group a step needs (0: flat groups are trained)."""
        self.worker = RolloutWorker(runner, worker_policy, group_size, concurrency)
        self.transfer: LocalWeightTransfer | ServerWeightSync | None = None
        self.primed = False
        """Whether the worker has work queued beyond the current call."""
        self.versions: list[int] = []
        """Generating version of each rollout of the latest batch."""
        self.stale_dropped = 0
        self._busy_at = (time.monotonic(), 0.0)

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        tasks = [self.index.task_for(p) for p in prompts]
        groups = tasks[:: self.group_size]
        if [t for t in groups for _ in range(self.group_size)] != tasks:
            raise ValueError(
                f"rollout_func got {len(tasks)} prompts that are not whole groups of "
                f"{self.group_size} in a row"
            )
        step = trainer.state.global_step
        started = time.monotonic()
        if self.transfer is None:
            self._start(trainer)
        self._sync(trainer, step)
        last = step + 1 >= trainer.state.max_steps
        if not self.primed:
            self.worker.submit(groups)
            self.primed = True
        if not last:
            self.worker.submit(groups)
        taken, generated = self._take(len(groups), step)
        waited = time.monotonic() - started
        done = self.runner.record(generated, step)
        self.versions = [i.model_version for group in taken for i in group]
        metrics = {**done.metrics, **self._metrics(taken, step, waited)}
        trainer_metrics = getattr(trainer, "_metrics", None)
        if trainer_metrics is not None:
            for name, value in metrics.items():
                trainer_metrics["train"][name].append(value)
        return to_trl_output(done.rollouts)

    def _take(self, needed: int, step: int) -> tuple[list[list[QueuedRollout]], Generated]:
        """The first `needed` acceptable groups to finish (step 3 of the module docstring)."""
        kept: list[list[QueuedRollout]] = []
        set_aside: list[list[QueuedRollout]] = []
        draws: list[str] = []
        seen = flat_seen = flat_kept = 0
        refills_left = needed * self.refill_rounds
        while len(kept) < needed:
            group = self.worker.take_group(self.stale_after_s)
            task_id = group[0].rollout.task_id
            if is_stale(group, step, self.max_staleness):
                self.stale_dropped += len(group)
                self.worker.submit([self.by_id[task_id]])
                continue
            seen += 1
            flat = flat_group([i.rollout for i in group])
            flat_seen += flat
            if flat and refills_left:
                exclude = {g[0].rollout.task_id for g in kept} | {task_id}
                exclude |= set(self.worker.queued_tasks)
                drawn = self.runner.settings.curriculum.refill_ids(1, exclude)
                if drawn:
                    refills_left -= 1
                    draws += drawn
                    set_aside.append(group)
                    self.worker.submit([self.by_id[drawn[0]]])
                    continue
            kept.append(group)
            flat_kept += flat
        dropped = [i.rollout for g in set_aside for i in g]
        for rollout in dropped:
            rollout.dropped = True
        sampling = {}
        if self.refill_rounds:
            sampling = {
                "sampling/zero_std_groups": flat_seen / seen,
                "sampling/refilled_groups": float(len(set_aside)),
                "sampling/refill_rollouts": float(len(set_aside) * self.group_size),
                "sampling/zero_std_after": flat_kept / needed,
            }
        rollouts = [i.rollout for g in kept for i in g]
        return kept, Generated(rollouts, dropped, sampling, draws)

    def _start(self, trainer: Any) -> None:
        if self.worker_policy.backend == "hf":
            model = trainer.accelerator.unwrap_model(trainer.model)
            twin = policy_copy(model)
            self.worker_policy.bind_model(twin)
            self.transfer = LocalWeightTransfer(twin, self.worker_policy.sampler.backend.lock)
            self.transfer.init_weight_transfer()
        else:  # vllm-server: the worker samples from the server the trainer pushes to
            self.worker_policy.bind(trainer)
            self.transfer = ServerWeightSync(trainer)
        self.worker.start()

    def _sync(self, trainer: Any, version: int) -> None:
        """The trainer's current weights to the worker's generator (see `_start`)."""
        assert self.transfer is not None
        if self.transfer.sent and self.worker.model_version == version:
            return
        if isinstance(self.transfer, ServerWeightSync):
            self.transfer.sync()
        else:
            model = trainer.accelerator.unwrap_model(trainer.model)
            self.transfer.pause()
            try:
                self.transfer.send_weights((n, p.detach()) for n, p in model.named_parameters())
            finally:
                self.transfer.resume()
        self.worker.update_model_version(version)

    def _metrics(
        self, taken: list[list[QueuedRollout]], step: int, waited: float
    ) -> dict[str, float]:
        staleness = [step - group_version(g) for g in taken]
        now, busy = time.monotonic(), self.worker.busy_seconds()
        since, busy_before = self._busy_at
        self._busy_at = (now, busy)
        out = {
            "async/staleness_mean": sum(staleness) / len(staleness),
            "async/staleness_max": float(max(staleness)),
            "async/stale_dropped_rollouts": float(self.stale_dropped),
            "async/wait_s": waited,
            "async/worker_busy_share": (busy - busy_before)
            / max(now - since, 1e-9)
            / self.worker.concurrency,
        }
        return out

    def close(self) -> None:
        """Stop the worker: queued episodes are dropped, those in progress finish within
        their time bound (so no sandbox outlives the run's cleanup) and are dropped."""
        self.worker.stop(self.stale_after_s)
        if isinstance(self.transfer, LocalWeightTransfer):
            self.transfer.destroy()


def importance_weights(
    train_logps: torch.Tensor,
    sampling_logps: torch.Tensor,
    mask: torch.Tensor,
    level: str = "token",
    cap: float = 3.0,
) -> torch.Tensor:
    """TRL's truncated importance weight of the training policy over the sampling one:
    `min(exp(train - sampling), cap)` per token (`level="token"`, shape (B, T)) or per
    sequence over its masked tokens (`"sequence"`, shape (B, 1)); 1 where `mask` is 0 or a
    log-prob is NaN."""
    diff = torch.nan_to_num((train_logps - sampling_logps) * mask, nan=0.0)
    if level == "sequence":
        diff = diff.sum(dim=-1, keepdim=True)
    elif level != "token":
        raise ValueError(f"importance-sampling level {level!r}: use 'token' or 'sequence'")
    return torch.clamp(torch.exp(diff), max=cap)


def ratio_stats(ratio: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """min / mean / max of `ratio` over the masked tokens (TRL's metric names)."""
    flat = ratio.flatten() if ratio.shape[-1] == 1 else ratio[mask.bool()]
    if flat.numel() == 0:
        return {}
    name = "sampling/importance_sampling_ratio"
    return {
        f"{name}/min": flat.min().item(),
        f"{name}/mean": flat.mean().item(),
        f"{name}/max": flat.max().item(),
    }
