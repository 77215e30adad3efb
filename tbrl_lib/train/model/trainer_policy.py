"""The policy GRPO trains, and the vLLM backend it samples from on GPUs.

`TrainerPolicy` is the `TokenPolicy` every training rollout runs: the one token-exact
renderer (`TokenChat`) over the trainer's current weights. The trainer's generation exists
only once the trainer does (its model, or its vLLM engine), so the session builds the policy
first and the trainer binds it (`bind(trainer)`) as the last step of its construction; a
policy used before that says so.

`VLLMBackend` samples with the trainer's vLLM engine, colocated (`trainer.vllm_generation.llm`)
or a vLLM server (`vllm serve`, TRL server mode) (`trainer.vllm_generation.vllm_client`), and returns, per
prompt, the sampled ids and their log-probs under the sampling distribution. vLLM itself is
imported lazily; a colocated engine samples through `policies.vllm_engine.LLMBackend`. The HF path (`tbrl_lib.policies.hf.HFBackend`) and the
batching front (`tbrl_lib.policies.batching`) live with the policies, since evaluation uses
them too. Left out: speculative decoding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trl.generation.vllm_client import VLLMClient

from tbrl_lib.policies.batching import BatchingGenerator
from tbrl_lib.policies.chat import Sample, TokenChat, TokenPolicy, stop_token_ids
from tbrl_lib.policies.hf import HFBackend
from tbrl_lib.policies.vllm_engine import INSTALL_HINT, LLMBackend


class TrainerPolicy(TokenPolicy):
    """The trainer's own policy: samples from its current weights once `bind` has run."""

    def __init__(
        self,
        tokenizer: Any,
        backend: str,
        temperature: float,
        top_p: float,
        max_context: int,
        enable_thinking: bool = True,
        max_batch_tokens: int | None = None,
    ) -> None:
        """`max_batch_tokens`: HF generation's batch bound (`BatchingGenerator`)."""
        chat = TokenChat(tokenizer, enable_thinking)
        super().__init__("trainer", chat, Unbound(), max_context)
        self.backend, self.temperature, self.top_p = backend, temperature, top_p
        self.max_batch_tokens = max_batch_tokens

    def bind(self, trainer: Any) -> None:
        """Sample from `trainer`: its live model (`hf`) or its vLLM engine (`vllm-*`)."""
        if self.backend == "hf":
            self.bind_model(trainer.model)
        else:
            self.sampler = BatchingGenerator(VLLMBackend(trainer, self.temperature, self.top_p))

    def bind_model(self, model: Any) -> None:
        """Sample from `model` itself (HF generation): the trainer's live model, or an
        asynchronous rollout worker's copy of it."""
        self.sampler = BatchingGenerator(
            HFBackend(model, self.tokenizer, self.temperature, self.top_p),
            max_batch_tokens=self.max_batch_tokens,
        )


class Unbound:
    """The sampler of a `TrainerPolicy` no trainer is bound to yet."""

    async def sample(
        self, prompt_ids: list[int], max_new_tokens: int, deadline: float | None = None
    ) -> Sample:
        raise RuntimeError("the trainer's policy samples only once a trainer is bound to it")


class VLLMBackend:
    """The trainer's vLLM engine: colocated `LLM` or the vLLM server client."""

    def __init__(self, trainer: Any, temperature: float, top_p: float = 1.0) -> None:
        generation = getattr(trainer, "vllm_generation", None)
        if generation is None:
            raise RuntimeError(
                "generation_backend is vllm-* but the trainer has no vLLM engine: install vllm "
                f"({INSTALL_HINT}) and set use_vllm=True, or use generation_backend='hf'"
            )
        self.generation, self.temperature, self.top_p = generation, temperature, top_p
        self.eos_ids = set(stop_token_ids(trainer.processing_class))

    def generate(
        self,
        prompts: list[list[int]],
        max_new_tokens: int,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[Sample]:
        """`abandoned` is not used: vLLM finishes a batch in seconds."""
        if self.generation.mode == "colocate":
            return self._colocate(prompts, max_new_tokens)
        out = self._client().generate(
            prompts=prompts,
            n=1,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=max_new_tokens,
            logprobs=0,
            generation_kwargs={"stop_token_ids": sorted(self.eos_ids)},
        )
        logprobs = out.get("logprobs") or [None] * len(out["completion_ids"])
        token_ids = out.get("logprob_token_ids") or [None] * len(out["completion_ids"])
        return [
            self._result(ids, sampled_logprobs(ids, lps, tops))
            for ids, lps, tops in zip(out["completion_ids"], logprobs, token_ids)
        ]

    def _client(self) -> Any:
        """TRL gives only the main process a client; every other rank talks HTTP with its own."""
        client = getattr(self.generation, "vllm_client", None)
        if client is None:
            base = self.generation.server_base_url or (
                f"http://{self.generation.server_host}:{self.generation.server_port}"
            )
            try:
                client = VLLMClient(
                    base_url=base, connection_timeout=self.generation.server_timeout
                )
            except OSError as exc:  # requests' ConnectionError is an OSError
                raise RuntimeError(
                    f"no vLLM server answers at {base} (waited {self.generation.server_timeout:.0f}s): "
                    "start it first (`tbrl train launch PRESET` writes commands.sh, which does)"
                ) from exc
            self.generation.vllm_client = client
        return client

    def _colocate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Sample]:
        engine = LLMBackend(self.generation.llm, self.eos_ids, self.temperature, self.top_p)
        return engine.generate(prompts, max_new_tokens)

    def _result(self, ids: list[int], logprobs: list[float] | None) -> Sample:
        return Sample(ids, logprobs, stopped=bool(ids) and ids[-1] in self.eos_ids)


def sampled_logprobs(
    ids: list[int], logprobs: list[list[float | None]] | None, token_ids: list[list[int]] | None
) -> list[float] | None:
    """The sampled token's log-prob at each position of a server reply.

    TRL's client returns, per position, candidates sorted by probability (the sampled one among
    them); the sampled token is not always first (top-k requests, ties), so it is looked up by id.
    """
    if logprobs is None:
        return None
    out = []
    for position, (token, values) in enumerate(zip(ids, logprobs)):
        candidates = token_ids[position] if token_ids else [token]
        value = values[candidates.index(token)] if token in candidates else values[0]
        # TRL's parser turns a NaN log-prob into None; 0.0 keeps that token's IS ratio <= 1.
        out.append(0.0 if value is None else value)
    return out
