"""`BatchingGenerator`: many concurrent episodes, one batched backend call.

Episodes ask for one assistant turn at a time, from many coroutines at once. The generator
collects the requests that arrive within `window_s` and hands them to a backend as one
batch, in a worker thread, so the event loop keeps driving sandboxes meanwhile. It is the
`Sampler` of `TokenPolicy` for local HF models (`tbrl_lib.policies.hf.HFBackend`) and for
the trainer's vLLM engine (`tbrl_lib.train.model.trainer_policy.VLLMBackend`).

A backend failure is handed to every episode waiting on that batch. A batch whose every
episode stopped waiting (cancelled) or is past its deadline is `abandoned`: the backend may
stop generating for it (`HFBackend` does, between two tokens) and return the replies so far,
so an episode out of time still gets what the model wrote, and a dead episode's reply never
holds up the next batch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from tbrl_lib.policies.chat import Sample
from tbrl_lib.process_memory import note_generation


class GenerationBackend(Protocol):
    def generate(
        self,
        prompts: list[list[int]],
        max_new_tokens: int,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[Sample]: ...


class BatchingGenerator:
    """Async front of a backend: requests arriving within `window_s` share one batch."""

    def __init__(
        self,
        backend: GenerationBackend,
        max_batch: int = 64,
        window_s: float = 0.01,
        max_batch_tokens: int | None = None,
    ) -> None:
        """`max_batch_tokens`: the most tokens a batch may hold, each request counted at the
        batch's longest prompt plus its new tokens (what a padded batch holds); a request over
        it alone still runs alone. The memory planner's `generation_token_budget`."""
        self.backend, self.max_batch, self.window_s = backend, max_batch, window_s
        self.max_batch_tokens = max_batch_tokens
        self._waiting: list[tuple] = []
        """Requests taken from the queue that did not fit the last batch: first in the next."""
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0
        self.batched_requests = 0
        self.generated_tokens = 0
        self.generate_seconds = 0.0
        """Time spent in the backend's `generate` calls (what a generation benchmark divides by)."""

    async def sample(
        self, prompt_ids: list[int], max_new_tokens: int, deadline: float | None = None
    ) -> Sample:
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done() or self._loop is not loop:
            self._queue, self._loop, self._waiting = asyncio.Queue(), loop, []
            self._worker = asyncio.create_task(self._serve())
        future: asyncio.Future = loop.create_future()
        await self._queue.put((prompt_ids, max_new_tokens, future, deadline))
        return await future

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None

    async def _serve(self) -> None:
        assert self._queue is not None
        while True:
            if not self._waiting:
                self._waiting.append(await self._queue.get())
            await asyncio.sleep(self.window_s)
            while not self._queue.empty():
                self._waiting.append(self._queue.get_nowait())
            batch = self._next_batch()
            # One call per max_new_tokens value keeps each backend call homogeneous.
            for budget in sorted({item[1] for item in batch}):
                group = [item for item in batch if item[1] == budget]
                started = time.perf_counter()
                try:
                    results = await asyncio.to_thread(
                        self.backend.generate, [g[0] for g in group], budget, _abandoned(group)
                    )
                except Exception as exc:  # noqa: BLE001 - handed to every waiting episode
                    for _, _, future, _ in group:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self.calls += 1
                self.batched_requests += len(group)
                self.generate_seconds += time.perf_counter() - started
                self.generated_tokens += sum(len(r.ids) for r in results)
                reply = max((len(r.ids) for r in results), default=0)
                note_generation(len(group), max(len(g[0]) for g in group) + reply, reply)
                for (_, _, future, _), result in zip(group, results, strict=True):
                    if not future.done():
                        future.set_result(result)

    def _next_batch(self) -> list[tuple]:
        """The longest run of waiting requests, oldest first, within `max_batch` and
        `max_batch_tokens` (at least one)."""
        count, longest = 1, _tokens(self._waiting[0])
        for item in self._waiting[1 : self.max_batch]:
            longest = max(longest, _tokens(item))
            if self.max_batch_tokens is not None and (count + 1) * longest > self.max_batch_tokens:
                break
            count += 1
        batch, self._waiting = self._waiting[:count], self._waiting[count:]
        return batch


def _tokens(item: tuple) -> int:
    """A request's prompt and new tokens: what it holds in a batch at its longest."""
    return len(item[0]) + item[1]


def _abandoned(group: list[tuple]) -> Callable[[], bool]:
    """True once no episode of the batch can use more tokens: each stopped waiting or is past
    its deadline (then it takes the reply so far)."""

    def abandoned() -> bool:
        now = time.monotonic()
        return all(f.done() or (d is not None and now >= d) for _, _, f, d in group)

    return abandoned
