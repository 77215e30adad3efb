"""An in-process rollout worker shaped like TRL's `RolloutWorkerProtocol`, and its weights.

TRL 1.15's `trl.experimental.async_grpo` defines the seam an asynchronous GRPO trainer drains:
a worker with `start`/`stop`/`update_model_version`/`check_health`, a `rollout_buffer` queue of
`RolloutSample`s (token ids, completion mask, the sampler's log-probs, the model version that
generated them, a group id) and a `metrics_queue`; and a `WeightTransferProtocol` that pushes
the trainer's weights to whoever generates. Here:

- `QueuedRollout` is one rollout in the buffer, with `RolloutSample`'s token fields
  (`input_ids`, `completion_mask`, `old_log_probs`) derived from the tbrl `Rollout` it holds;
- `RolloutWorker` is a thread that takes batches of tasks (`submit`) and runs them through
  the ONE rollout path, `RolloutRunner.generate` (the synchronous `rollout_func` runs the same
  code), with its own copy of the policy; each batch's groups enter the buffer whole, tagged
  with the version of the weights that generated them;
- `LocalWeightTransfer` is the transfer on one machine: it copies the trainer's parameters
  into the worker's copy (TRL's default streams them to a vLLM server over NCCL);
- `split_stale` sorts taken groups into fresh and too old (`max_staleness` optimizer steps).

Saving and counting the rollouts (`RolloutRunner.record`: the curriculum, the infra stop, the
metrics) is the consumer's, in the trainer's thread (`async_pipeline.py`). A worker's
exception (a bug in a rollout, or the infra stop's error) is re-raised as is by `take`.
Left out: a worker in another process or node, and a vLLM-serving worker.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from tbrl_lib.policies.base import Policy
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.rollout_records import Rollout
from tbrl_lib.train.rollout_runner import Generated, RolloutRunner


@dataclass
class QueuedRollout:
    """One rollout in the worker's buffer, as TRL's `RolloutSample` would carry it."""

    rollout: Rollout
    group_id: int
    """Run-wide number of its group (`num_generations` rollouts of one task)."""
    model_version: int
    """Optimizer steps the generating weights had taken."""
    batch: int
    """The `submit` call it answers."""
    enqueued_at: float = field(default_factory=time.monotonic)

    @property
    def input_ids(self) -> list[int]:
        return self.rollout.prompt_ids + self.rollout.completion_ids

    @property
    def completion_mask(self) -> list[int]:
        """1 on the policy's own tokens (env mask), 0 on the prompt and on observations."""
        return [0] * len(self.rollout.prompt_ids) + list(self.rollout.env_mask)

    @property
    def old_log_probs(self) -> list[float]:
        """The sampler's log-prob of each token (0.0 where none exists: the prompt)."""
        sampled = self.rollout.logprobs or [0.0] * len(self.rollout.completion_ids)
        return [0.0] * len(self.rollout.prompt_ids) + list(sampled)


def split_stale(
    items: list[QueuedRollout], version: int, max_staleness: int
) -> tuple[list[QueuedRollout], list[QueuedRollout]]:
    """(fresh, stale): whole groups whose generating version is more than `max_staleness`
    optimizer steps behind `version` are stale."""
    fresh, stale = [], []
    for item in items:
        (stale if version - item.model_version > max_staleness else fresh).append(item)
    fresh_groups = {i.group_id for i in fresh}
    mixed = fresh_groups & {i.group_id for i in stale}
    if mixed:
        raise ValueError(f"groups {sorted(mixed)} mix model versions; a group is generated whole")
    return fresh, stale


class LocalWeightTransfer:
    """`WeightTransferProtocol` on one machine: the trainer's parameters into `target`."""

    def __init__(self, target: torch.nn.Module) -> None:
        self.target = target
        self.sent = 0
        """Transfers so far."""

    def init_weight_transfer(self) -> None:
        """Nothing to set up: both models live in this process."""

    def pause(self) -> None:
        """Nothing to pause: the consumer transfers only while the worker is idle."""

    def send_weights(self, iterator: Iterator[tuple[str, torch.Tensor]]) -> None:
        params = dict(self.target.named_parameters())
        with torch.no_grad():
            for name, tensor in iterator:
                if name not in params:
                    raise KeyError(f"weight transfer: the worker's model has no parameter {name!r}")
                params[name].copy_(tensor)
        self.sent += 1

    def resume(self) -> None:
        """Nothing to resume (see `pause`)."""

    def destroy(self) -> None:
        """Nothing to release."""


def policy_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A frozen copy of `model` to generate with (no gradients, eval mode)."""
    twin = copy.deepcopy(model)
    twin.requires_grad_(False)
    return twin.eval()


class RolloutWorker:
    """TRL's `RolloutWorkerProtocol`, in a thread of this process (see the module docstring)."""

    def __init__(self, runner: RolloutRunner, policy: Policy, group_size: int) -> None:
        self.runner, self.policy, self.group_size = runner, policy, group_size
        self.rollout_buffer: queue.Queue[QueuedRollout] = queue.Queue()
        self.metrics_queue: queue.Queue[dict[str, float]] = queue.Queue()
        self.model_version = 0
        self._requests: queue.Queue[tuple[int, list[Task]] | None] = queue.Queue()
        self._generated: dict[int, Generated] = {}
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._busy_since: float | None = None
        self._batches = 0
        self._groups = 0
        self._done = 0
        """Batches in the buffer (the worker writes it; `_batches` the consumer)."""

    # -- RolloutWorkerProtocol ----------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="tbrl-rollout-worker", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the thread to end after its current batch; wait at most `timeout_s` (a
        batch still running is a daemon thread's, and its sandboxes the run's cleanup's)."""
        if self._thread is None:
            return
        self._requests.put(None)
        self._thread.join(timeout_s)

    def update_model_version(self, model_version: int) -> None:
        self.model_version = model_version

    def check_health(self, stale_after_s: float) -> None:
        """Re-raise the worker's exception; raise if it died or one batch ran too long."""
        if self._error is not None:
            raise self._error
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError("the rollout worker is not running (never started, or stopped)")
        busy = self._busy_since
        if busy is not None and time.monotonic() - busy > stale_after_s:
            raise TimeoutError(
                f"the rollout worker has worked on one batch for more than {stale_after_s:.0f}s "
                "(longer than its episodes' time limits allow)"
            )

    # -- the consumer's side ------------------------------------------------------------
    def submit(self, tasks: list[Task]) -> int:
        """Queue a batch (whole groups of `group_size`, in order); returns its number."""
        if len(tasks) % self.group_size:
            raise ValueError(
                f"a batch of {len(tasks)} tasks is not whole groups of {self.group_size}"
            )
        self._batches += 1
        self._requests.put((self._batches, list(tasks)))
        return self._batches

    def take(
        self, count: int, stale_after_s: float, poll_s: float = 0.5
    ) -> tuple[list[QueuedRollout], Generated]:
        """The next `count` rollouts (one batch) and the batch's refill record; waits,
        checking the worker's health, never past `stale_after_s` of work on one batch."""
        items: list[QueuedRollout] = []
        while len(items) < count:
            try:
                items.append(self.rollout_buffer.get(timeout=poll_s))
            except queue.Empty:
                self.check_health(stale_after_s)
                if self._done == self._batches and self.rollout_buffer.empty():
                    raise RuntimeError(
                        f"waiting for {count - len(items)} rollouts, but no batch is submitted"
                    ) from None
        batches = {i.batch for i in items}
        if len(batches) != 1:
            raise RuntimeError(f"took {count} rollouts spanning batches {sorted(batches)}")
        return items, self._generated.pop(batches.pop())

    # -- the thread -----------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                return
            batch, tasks = request
            version, started = self.model_version, time.monotonic()
            self._busy_since = started
            try:
                generated = self.runner.generate(tasks, self.policy)
            except BaseException as error:  # handed to the consumer by check_health
                self._error = error
                return
            finally:
                self._busy_since = None
            self._generated[batch] = generated
            self.metrics_queue.put({"async/generate_s": time.monotonic() - started})
            rollouts = generated.rollouts
            for start in range(0, len(rollouts), self.group_size):
                self._groups += 1
                for rollout in rollouts[start : start + self.group_size]:
                    self.rollout_buffer.put(QueuedRollout(rollout, self._groups, version, batch))
            self._done += 1


def drain(q: queue.Queue[Any]) -> list[Any]:
    """Everything in `q` now, without waiting."""
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out
