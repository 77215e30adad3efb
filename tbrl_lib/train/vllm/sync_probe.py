"""Proof that the vLLM engine samples from the trainer's weights, measured at every push.

After each weight push (TRL's `sync_weights`, before a step's rollouts), `SyncProbe` scores one
fixed token sequence (the first task's prompt) twice: by the engine (prompt log-probs, server
or colocated) and by the trainer's model. It logs, on that step's line:

    vllm/sync_logp_diff_mean, _max   |engine - trainer| over the sequence's tokens (~1e-5 in fp32)
    vllm/probe_logp_change_max       max |engine now - engine at the previous push|: > 0 once
                                     the optimizer has moved the weights
    vllm/weight_pushes               pushes so far

Single-process runs only (under ZeRO-3/FSDP the trainer's forward is a collective).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class SyncProbe:
    """Wraps the trainer's `vllm_generation.sync_weights` with the measurement."""

    def __init__(self, trainer: Any, sequence: list[int], tracked: dict[str, float]) -> None:
        if len(sequence) < 2:
            raise ValueError("the sync probe needs a sequence of at least 2 tokens")
        self.trainer, self.sequence, self.tracked = trainer, sequence, tracked
        self.generation = trainer.vllm_generation
        self.push: Callable[[], None] = self.generation.sync_weights
        self.previous: list[float] | None = None
        self.pushes = 0
        self.history: list[dict[str, float]] = []

    def install(self) -> SyncProbe:
        self.generation.sync_weights = self
        return self

    def __call__(self) -> None:
        self.push()
        self.pushes += 1
        engine, trainer = self.engine_logprobs(), self.trainer_logprobs()
        diffs = [abs(a - b) for a, b in zip(engine, trainer, strict=True)]
        row = {
            "vllm/sync_logp_diff_mean": sum(diffs) / len(diffs),
            "vllm/sync_logp_diff_max": max(diffs),
            "vllm/weight_pushes": float(self.pushes),
        }
        if self.previous is not None:
            row["vllm/probe_logp_change_max"] = max(
                abs(a - b) for a, b in zip(engine, self.previous, strict=True)
            )
        self.previous = engine
        self.history.append(row)
        self.tracked.update(row)

    def engine_logprobs(self) -> list[float]:
        """The engine's log-prob of each token of the sequence after the first."""
        if self.generation.mode == "colocate":
            from vllm import SamplingParams  # the engine exists, so vllm imports

            params = SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
            out = self.generation.llm.generate(
                [{"prompt_token_ids": self.sequence}], sampling_params=params, use_tqdm=False
            )[0]
            return [
                d[token].logprob
                for d, token in zip(out.prompt_logprobs[1:], self.sequence[1:], strict=True)
            ]
        reply = self.generation.vllm_client.get_sequence_logprobs(
            [self.sequence], prompt_lengths=[1], top_logprobs=1
        )
        return [values[0] for values in reply["actual_logprobs"][0]]

    def trainer_logprobs(self) -> list[float]:
        """The trainer's log-prob of the same tokens (the adapter applied, as merged for vLLM)."""
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        ids = torch.tensor([self.sequence], device=self.trainer.accelerator.device)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0, :-1].float()
        finally:
            model.train(was_training)
        logps = logits.log_softmax(-1).gather(-1, ids[0, 1:, None]).squeeze(-1)
        return logps.tolist()
