"""Token-level generation for training rollouts: token ids in, sampled token ids out.

Episodes ask for one assistant turn at a time, from many coroutines at once. The
`BatchingGenerator` collects the requests that arrive together and hands them to a backend
as one batch, in a worker thread, so the event loop keeps driving sandboxes meanwhile:

- `HFBackend`: `model.generate` of the trainer's current model (CPU smoke runs, debugging);
- `VLLMBackend`: the trainer's vLLM engine, colocated (`trainer.vllm_generation.llm`) or a
  `trl vllm-serve` server (`trainer.vllm_generation.vllm_client`). vLLM is imported lazily.

Each result carries the sampled ids (ending at EOS when the model stopped) and, when the
backend reports them, the log-probabilities of those ids under the sampling distribution.
What is left out: prefix caching across turns (vLLM does it by itself), speculative decoding.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Generation:
    ids: list[int]
    logprobs: list[float] | None = None
    stopped: bool = True
    """True when the model emitted EOS; False when `max_new_tokens` cut it."""


def stop_token_ids(tokenizer: Any) -> list[int]:
    """EOS plus the chat end-of-turn tokens (`<|im_end|>`, `<|endoftext|>`) the vocabulary has."""
    ids = {tokenizer.eos_token_id}
    for token in ("<|im_end|>", "<|endoftext|>"):
        found = tokenizer.convert_tokens_to_ids(token)
        if isinstance(found, int) and found != tokenizer.unk_token_id:
            ids.add(found)
    return sorted(i for i in ids if i is not None)


class GenerationBackend(Protocol):
    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Generation]: ...


class HFBackend:
    """Sampling with `transformers` `generate` on the trainer's model (left-padded batch)."""

    def __init__(self, model: Any, tokenizer: Any, temperature: float, top_p: float = 1.0) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.top_p = temperature, top_p
        self.eos_ids = set(stop_token_ids(tokenizer))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(self.eos_ids))

    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        import torch

        width = max(len(p) for p in prompts)
        device = next(self.model.parameters()).device
        ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids, attention_mask=mask, do_sample=True, temperature=self.temperature,
                    top_p=self.top_p, top_k=0, max_new_tokens=max_new_tokens, pad_token_id=self.pad_id,
                    eos_token_id=sorted(self.eos_ids), output_scores=True, return_dict_in_generate=True,
                )
        finally:
            self.model.train(was_training)
        new = out.sequences[:, width:]
        # Scores are the processed (tempered, top-p filtered) logits: the sampling distribution.
        logps = torch.stack(out.scores, dim=1).float().log_softmax(-1)
        picked = logps.gather(-1, new.unsqueeze(-1)).squeeze(-1)
        results = []
        for row, row_logps in zip(new.tolist(), picked.tolist()):
            end = next((i + 1 for i, tok in enumerate(row) if tok in self.eos_ids), None)
            stop = end if end is not None else len(row)
            results.append(Generation(row[:stop], row_logps[:stop], stopped=end is not None))
        return results


class VLLMBackend:
    """The trainer's vLLM engine: colocated `LLM` or the `trl vllm-serve` client."""

    def __init__(self, trainer: Any, temperature: float, top_p: float = 1.0) -> None:
        generation = getattr(trainer, "vllm_generation", None)
        if generation is None:
            raise RuntimeError(
                "generation_backend is vllm-* but the trainer has no vLLM engine: install vllm "
                "(`pip install -e .[gpu]`) and set use_vllm=True, or use generation_backend='hf'")
        self.generation, self.temperature, self.top_p = generation, temperature, top_p
        self.eos_ids = set(stop_token_ids(trainer.processing_class))

    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        if self.generation.mode == "colocate":
            return self._colocate(prompts, max_new_tokens)
        out = self._client().generate(
            prompts=prompts, n=1, temperature=self.temperature, top_p=self.top_p,
            max_tokens=max_new_tokens, logprobs=0, generation_kwargs={"stop_token_ids": sorted(self.eos_ids)})
        return [self._result(ids, [lp[0] for lp in lps])
                for ids, lps in zip(out["completion_ids"], out["logprobs"])]

    def _client(self) -> Any:
        """TRL gives only the main process a client; every other rank talks HTTP with its own."""
        client = getattr(self.generation, "vllm_client", None)
        if client is None:
            from trl.generation.vllm_client import VLLMClient

            base = self.generation.server_base_url or (
                f"http://{self.generation.server_host}:{self.generation.server_port}")
            client = self.generation.vllm_client = VLLMClient(
                base_url=base, connection_timeout=self.generation.server_timeout)
        return client

    def _colocate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        try:
            from vllm import SamplingParams
        except ImportError as exc:  # pragma: no cover - GPU machines only
            raise RuntimeError("vllm is not installed; `pip install -e .[gpu]` on the GPU machine") from exc
        params = SamplingParams(n=1, temperature=self.temperature, top_p=self.top_p,
                                max_tokens=max_new_tokens, logprobs=0, stop_token_ids=sorted(self.eos_ids))
        outputs = self.generation.llm.generate([{"prompt_token_ids": p} for p in prompts],
                                               sampling_params=params, use_tqdm=False)
        results = []
        for output in outputs:
            sample = output.outputs[0]
            logps = [next(iter(d.values())).logprob for d in sample.logprobs] if sample.logprobs else None
            results.append(self._result(list(sample.token_ids), logps))
        return results

    def _result(self, ids: list[int], logprobs: list[float] | None) -> Generation:
        return Generation(ids, logprobs, stopped=bool(ids) and ids[-1] in self.eos_ids)


class BatchingGenerator:
    """Async front of a backend: requests arriving within `window_s` share one batch."""

    def __init__(self, backend: GenerationBackend, max_batch: int = 64, window_s: float = 0.01) -> None:
        self.backend, self.max_batch, self.window_s = backend, max_batch, window_s
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self.calls = 0
        self.batched_requests = 0

    async def generate(self, prompt_ids: list[int], max_new_tokens: int) -> Generation:
        if self._queue is None or self._worker is None or self._worker.done():
            self._queue = asyncio.Queue()
            self._worker = asyncio.create_task(self._serve())
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put((prompt_ids, max_new_tokens, future))
        return await future

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None

    async def _serve(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            await asyncio.sleep(self.window_s)
            while not self._queue.empty() and len(batch) < self.max_batch:
                batch.append(self._queue.get_nowait())
            # One call per max_new_tokens value keeps each backend call homogeneous.
            for budget in sorted({item[1] for item in batch}):
                group = [item for item in batch if item[1] == budget]
                try:
                    results = await asyncio.to_thread(self.backend.generate, [g[0] for g in group], budget)
                except Exception as exc:  # noqa: BLE001 - handed to every waiting episode
                    for _, _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self.calls += 1
                self.batched_requests += len(group)
                for (_, _, future), result in zip(group, results, strict=True):
                    if not future.done():
                        future.set_result(result)
