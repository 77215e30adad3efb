"""A streaming rollout worker shaped like TRL's `RolloutWorkerProtocol`, and its weights.

TRL 1.15's `trl.experimental.async_grpo` defines the seam an asynchronous GRPO trainer drains:
a worker with `start`/`stop`/`update_model_version`/`check_health`, a `rollout_buffer` queue of
`RolloutSample`s (token ids, completion mask, the sampler's log-probs, the model version that
generated them, a group id) and a `metrics_queue`; and a `WeightTransferProtocol` that pushes
the trainer's weights to whoever generates. Here:

- `QueuedRollout` is one rollout in the buffer, with `RolloutSample`'s token fields
  (`input_ids`, `completion_mask`, `old_log_probs`) derived from the tbrl `StepRollout` it holds;
- `RolloutWorker` is a thread with its own asyncio loop that keeps `concurrency` episodes
  running at all times (streaming): the consumer queues groups (`submit`: one task per group
  of `group_size` rollouts), `concurrency` slots take episodes from that queue in order, each
  through the ONE rollout path, `StepRunner.run_all` (the synchronous `rollout_func` runs the
  same code: sandbox, episode, reward, outage reruns, stubs and masks), with the worker's
  policy. A group enters the buffer whole when its last episode ends, so groups leave in the
  order they finish, not the order they were queued; a long episode holds up only its group.
  Each rollout is tagged with the model version when its episode started; a group's version
  is its oldest;
- `LocalWeightTransfer` is the transfer on one machine: it copies the trainer's parameters
  into the worker's copy, between two generation calls (it holds the backend's lock), while
  episodes go on: an episode can span two versions, and each token's recorded log-prob is the
  one of the weights that sampled it (TRL's default streams weights to a vLLM server over NCCL;
  `ServerWeightSync` is that path on GPUs);
- `is_stale` says whether a taken group is too old (`max_staleness` optimizer steps).

Saving and counting the rollouts (`StepRunner.record`: the curriculum, the infra stop, the
metrics), dynamic sampling's choices and the staleness bound are the consumer's, in the
trainer's thread (`async_pipeline.py`). A worker's exception (a bug in a rollout, or the infra
stop's error) is re-raised as is by `take_group`. Left out: a worker in another process or node.
"""

from __future__ import annotations

import asyncio
import copy
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from tbrl_lib.policies.base import Policy
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.step.runner import StepRollout, StepRunner


@dataclass
class QueuedRollout:
    """One rollout in the worker's buffer, as TRL's `RolloutSample` would carry it."""

    rollout: StepRollout
    group_id: int
    """Run-wide number of its group (`group_size` rollouts of one task), in queueing order."""
    model_version: int
    """Optimizer steps the generating weights had taken when its episode started."""
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


def group_version(group: list[QueuedRollout]) -> int:
    """The oldest version that generated any of the group's rollouts."""
    return min(i.model_version for i in group)


def is_stale(group: list[QueuedRollout], version: int, max_staleness: int) -> bool:
    """Whether the group's oldest rollout's version is more than `max_staleness` optimizer
    steps behind `version`."""
    return version - group_version(group) > max_staleness


class LocalWeightTransfer:
    """`WeightTransferProtocol` on one machine: the trainer's parameters into `target`,
    between two generation calls (`lock` is the one the generating backend holds)."""

    def __init__(self, target: torch.nn.Module, lock: threading.Lock) -> None:
        self.target, self.lock = target, lock
        self.sent = 0
        """Transfers so far."""

    def init_weight_transfer(self) -> None:
        """Nothing to set up: both models live in this process."""

    def pause(self) -> None:
        """Wait for the generation call in progress to end; hold the next one."""
        self.lock.acquire()

    def send_weights(self, iterator: Iterator[tuple[str, torch.Tensor]]) -> None:
        params = dict(self.target.named_parameters())
        with torch.no_grad():
            for name, tensor in iterator:
                if name not in params:
                    raise KeyError(f"weight transfer: the worker's model has no parameter {name!r}")
                params[name].copy_(tensor)
        self.sent += 1

    def resume(self) -> None:
        self.lock.release()

    def destroy(self) -> None:
        """Nothing to release."""


def policy_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A frozen copy of `model` to generate with (no gradients, eval mode)."""
    twin = copy.deepcopy(model)
    twin.requires_grad_(False)
    return twin.eval()


@dataclass
class _Group:
    task: Task
    group_id: int
    results: list[QueuedRollout | None]
    """One place per rollout, filled as its episode ends."""


class RolloutWorker:
    """TRL's `RolloutWorkerProtocol`, streaming, in a thread of this process (see the module
    docstring)."""

    def __init__(
        self, runner: StepRunner, policy: Policy, group_size: int, concurrency: int
    ) -> None:
        self.runner, self.policy = runner, policy
        self.group_size, self.concurrency = group_size, concurrency
        self.rollout_buffer: queue.Queue[QueuedRollout] = queue.Queue()
        self.metrics_queue: queue.Queue[dict[str, float]] = queue.Queue()
        """The protocol's; empty: the pipeline measures the worker itself (`busy_seconds`)."""
        self.model_version = 0
        self._lock = threading.Lock()
        self._pending: deque[tuple[_Group, int]] = deque()
        """Episodes not started yet: (group, index in it), in queueing order."""
        self._running: dict[int, float] = {}
        """Episodes in progress: slot -> start time."""
        self._in_flight: dict[int, _Group] = {}
        """Groups with an episode started and not all ended: group id -> group."""
        self._loop = asyncio.new_event_loop()
        self._work = asyncio.Event()
        """Set (in the worker's loop) when episodes are queued or the worker stops."""
        self._closing = False
        self._groups = 0
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._busy = (time.monotonic(), 0.0)
        """(last change, episode-seconds up to it): the integral of episodes running."""

    # -- RolloutWorkerProtocol ----------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._main, name="tbrl-rollout-worker", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Start no more episodes (the queued ones are dropped); wait at most `timeout_s` for
        those in progress (a straggler is a daemon thread's, its sandboxes the run's cleanup's)."""
        with self._lock:
            self._closing = True
            self._pending.clear()
        self._poke()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def update_model_version(self, model_version: int) -> None:
        self.model_version = model_version

    def busy_seconds(self) -> float:
        """Episode-seconds run so far (over `concurrency` slots: their busy time)."""
        with self._lock:
            since, total = self._busy
            return total + (time.monotonic() - since) * len(self._running)

    def _count_busy(self) -> None:
        """Close the integral's current piece (call with `_lock` held, before a change)."""
        now = time.monotonic()
        since, total = self._busy
        self._busy = (now, total + (now - since) * len(self._running))

    def check_health(self, stale_after_s: float) -> None:
        """Re-raise the worker's exception; raise if it died or an episode ran too long."""
        if self._error is not None:
            raise self._error
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError("the rollout worker is not running (never started, or stopped)")
        with self._lock:
            oldest = min(self._running.values(), default=None)
        if oldest is not None and time.monotonic() - oldest > stale_after_s:
            raise TimeoutError(
                f"a rollout worker episode has run for more than {stale_after_s:.0f}s "
                "(longer than its time limit allows)"
            )

    # -- the consumer's side ------------------------------------------------------------
    def submit(self, tasks: list[Task]) -> list[int]:
        """Queue one group of `group_size` rollouts per task, in order; their group ids."""
        ids = []
        with self._lock:
            for task in tasks:
                self._groups += 1
                group = _Group(task, self._groups, [None] * self.group_size)
                self._pending.extend((group, i) for i in range(self.group_size))
                ids.append(group.group_id)
        self._poke()
        return ids

    def _poke(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._work.set)
        except RuntimeError:  # the loop has closed: the worker has ended
            pass

    @property
    def queued_tasks(self) -> list[str]:
        """Task ids of the groups queued or in progress (not yet in the buffer)."""
        with self._lock:
            started = [g.task.id for g in self._in_flight.values()]
            return [g.task.id for g, i in self._pending if i == 0] + started

    def take_group(self, stale_after_s: float, poll_s: float = 0.5) -> list[QueuedRollout]:
        """The next whole group to finish; waits, checking the worker's health."""
        first = self._get(stale_after_s, poll_s)
        # the rest are being put right now: the worker puts a group's rollouts in a row
        return [first] + [self.rollout_buffer.get(timeout=60) for _ in range(self.group_size - 1)]

    def _get(self, stale_after_s: float, poll_s: float) -> QueuedRollout:
        while True:
            try:
                return self.rollout_buffer.get(timeout=poll_s)
            except queue.Empty:
                self.check_health(stale_after_s)
                with self._lock:
                    idle = not self._pending and not self._running and not self._in_flight
                if idle and self.rollout_buffer.empty():
                    raise RuntimeError("waiting for a group, but none is queued") from None

    # -- the thread -----------------------------------------------------------------------
    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as error:  # handed to the consumer by check_health
            self._error = error
        finally:  # what the episodes left running (the batching front's server) ends here
            left = asyncio.all_tasks(self._loop)
            for task in left:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    async def _serve(self) -> None:
        slots = [asyncio.create_task(self._slot(n)) for n in range(self.concurrency)]
        try:
            await asyncio.gather(*slots)
        finally:  # one slot's bug ends the others' episodes too, their sandboxes cleaned up
            for slot in slots:
                slot.cancel()
            await asyncio.gather(*slots, return_exceptions=True)

    async def _slot(self, slot: int) -> None:
        while True:
            with self._lock:
                if self._closing:
                    return
                job = self._pending.popleft() if self._pending else None
                if job is not None:
                    self._count_busy()
                    self._running[slot] = time.monotonic()
                    self._in_flight[job[0].group_id] = job[0]
            if job is None:
                self._work.clear()
                await self._work.wait()
                continue
            group, index = job
            version = self.model_version
            try:
                [rollout] = await self.runner.run_all([group.task], self.policy, progress=False)
            finally:
                with self._lock:
                    self._count_busy()
                    self._running.pop(slot, None)
            group.results[index] = QueuedRollout(rollout, group.group_id, version)
            if None not in group.results:  # the whole group at once: nothing awaits in between
                with self._lock:
                    self._in_flight.pop(group.group_id, None)
                for item in group.results:
                    assert item is not None
                    self.rollout_buffer.put(item)
