"""vLLM generation for training rollouts: the trainer's engine as a `BatchingGenerator` backend.

`VLLMBackend` samples with the trainer's vLLM engine, colocated (`trainer.vllm_generation.llm`)
or a `trl vllm-serve` server (`trainer.vllm_generation.vllm_client`), and returns, per
prompt, the sampled ids and their log-probs under the sampling distribution. vLLM is
imported lazily (GPU machines only). The HF path (`tbrl_lib.policies.hf.HFBackend`) and the
batching front (`tbrl_lib.policies.batching`) live with the policies, since evaluation uses
them too. Left out: speculative decoding.
"""

from __future__ import annotations

from typing import Any

from tbrl_lib.policies.chat import Sample, stop_token_ids


class VLLMBackend:
    """The trainer's vLLM engine: colocated `LLM` or the `trl vllm-serve` client."""

    def __init__(self, trainer: Any, temperature: float, top_p: float = 1.0) -> None:
        generation = getattr(trainer, "vllm_generation", None)
        if generation is None:
            raise RuntimeError(
                "generation_backend is vllm-* but the trainer has no vLLM engine: install vllm "
                "(`pip install -e .[gpu]`) and set use_vllm=True, or use generation_backend='hf'"
            )
        self.generation, self.temperature, self.top_p = generation, temperature, top_p
        self.eos_ids = set(stop_token_ids(trainer.processing_class))

    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Sample]:
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
        return [
            self._result(ids, [lp[0] for lp in lps])
            for ids, lps in zip(out["completion_ids"], out["logprobs"])
        ]

    def _client(self) -> Any:
        """TRL gives only the main process a client; every other rank talks HTTP with its own."""
        client = getattr(self.generation, "vllm_client", None)
        if client is None:
            from trl.generation.vllm_client import VLLMClient

            base = self.generation.server_base_url or (
                f"http://{self.generation.server_host}:{self.generation.server_port}"
            )
            client = self.generation.vllm_client = VLLMClient(
                base_url=base, connection_timeout=self.generation.server_timeout
            )
        return client

    def _colocate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Sample]:
        try:
            from vllm import SamplingParams
        except ImportError as exc:  # pragma: no cover - GPU machines only
            raise RuntimeError(
                "vllm is not installed; `pip install -e .[gpu]` on the GPU machine"
            ) from exc
        params = SamplingParams(
            n=1,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=max_new_tokens,
            logprobs=0,
            stop_token_ids=sorted(self.eos_ids),
        )
        outputs = self.generation.llm.generate(
            [{"prompt_token_ids": p} for p in prompts], sampling_params=params, use_tqdm=False
        )
        results = []
        for output in outputs:
            sample = output.outputs[0]
            logps = (
                [next(iter(d.values())).logprob for d in sample.logprobs]
                if sample.logprobs
                else None
            )
            results.append(self._result(list(sample.token_ids), logps))
        return results

    def _result(self, ids: list[int], logprobs: list[float] | None) -> Sample:
        return Sample(ids, logprobs, stopped=bool(ids) and ids[-1] in self.eos_ids)
