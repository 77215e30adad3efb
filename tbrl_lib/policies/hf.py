"""Local Hugging Face causal LMs: `HFBackend` (batched `generate`) and `HFPolicy`.

`HFBackend` samples a left-padded batch with `transformers` `generate` and returns, per
prompt, the sampled ids up to and including the first stop token and their log-probs
under the sampling distribution (tempered, top-p filtered). The trainer uses it on its
live model (CPU runs, debugging); `HFPolicy` uses it on a checkpoint for evaluation and
episodes, behind a `BatchingGenerator`, so concurrent episodes share forward passes.

`HFPolicy` is a `TokenPolicy` (see `chat.py`): exact ids in and out, the one renderer.
Left out: KV-cache reuse across turns (each turn re-encodes the context; at scale,
generation goes through vLLM, which caches prefixes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tbrl_lib.policies.batching import BatchingGenerator
from tbrl_lib.policies.chat import Sample, TokenChat, TokenPolicy, stop_token_ids
from tbrl_lib.slow_notice import SLOW_AFTER_S, slow_notice


class HFBackend:
    """Batched sampling with `transformers` `generate` (one call at a time per model)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        temperature: float,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.eos_ids = set(stop_token_ids(tokenizer))
        self.pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_ids)
        )
        self.lock = threading.Lock()
        """Held around each `generate` call: whoever swaps the model's weights holds it too
        (an asynchronous worker's copy is updated between calls, never inside one)."""

    def generate(
        self,
        prompts: list[list[int]],
        max_new_tokens: int,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[Sample]:
        """Sample each prompt; stops early (between tokens) once `abandoned()` says nobody
        waits for the batch any more."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        class Abandoned(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                return torch.full((input_ids.shape[0],), bool(abandoned()), dtype=torch.bool)

        width = max(len(p) for p in prompts)
        device = next(self.model.parameters()).device
        ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        sampling = self.temperature > 0
        with self.lock:
            if self.seed is not None:
                torch.manual_seed(self.seed)
            was_training = self.model.training
            self.model.eval()
            try:
                with torch.no_grad():
                    out = self.model.generate(
                        input_ids=ids,
                        attention_mask=mask,
                        do_sample=sampling,
                        temperature=self.temperature if sampling else None,
                        top_p=self.top_p if sampling else None,
                        top_k=0 if sampling else None,
                        max_new_tokens=max_new_tokens,
                        pad_token_id=self.pad_id,
                        eos_token_id=sorted(self.eos_ids),
                        output_scores=True,
                        return_dict_in_generate=True,
                        stopping_criteria=StoppingCriteriaList([Abandoned()])
                        if abandoned
                        else None,
                    )
            finally:
                self.model.train(was_training)
        new = out.sequences[:, width:]
        # Scores are the processed (tempered, top-p filtered) logits: the sampling distribution.
        # One step at a time, so no batch x tokens x vocab copy is made beside `generate`'s own.
        picked = torch.stack(
            [
                step.float().log_softmax(-1).gather(-1, new[:, t, None]).squeeze(-1)
                for t, step in enumerate(out.scores)
            ],
            dim=1,
        )
        del out
        results = []
        for row, row_logps in zip(new.tolist(), picked.tolist(), strict=True):
            end = next((i + 1 for i, tok in enumerate(row) if tok in self.eos_ids), None)
            stop = end if end is not None else len(row)
            results.append(Sample(row[:stop], row_logps[:stop], stopped=end is not None))
        return results


class HFPolicy(TokenPolicy):
    """A local model (`hf:SPEC`: a folder, a packaged name such as `smollm2-135m`, `tiny`, a
    hub id; `tbrl_lib.models.resolve_model`), sampled through a `BatchingGenerator`."""

    def __init__(
        self,
        path: str | Path,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        enable_thinking: bool = True,
        device: str = "cpu",
        seed: int | None = None,
        name: str | None = None,
        slow_after_s: float = SLOW_AFTER_S,
        max_batch_tokens: int | None = None,
    ) -> None:
        """`name`: what trajectories record as the policy (default `hf:PATH`); a load that
        takes over `slow_after_s` says so (`slow_notice`); `max_batch_tokens`: the most tokens
        one generation batch holds (`BatchingGenerator`; None: no bound)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy, as torch

        with slow_notice(f"loading model {path}", slow_after_s):
            tokenizer = AutoTokenizer.from_pretrained(str(path))
            model = AutoModelForCausalLM.from_pretrained(str(path)).to(device).eval()
        self.model = model
        self.backend = HFBackend(model, tokenizer, temperature, top_p, seed=seed)
        super().__init__(
            name or f"hf:{path}",
            TokenChat(tokenizer, enable_thinking),
            BatchingGenerator(self.backend, max_batch_tokens=max_batch_tokens),
            max_context=getattr(model.config, "max_position_embeddings", 32768),
        )
