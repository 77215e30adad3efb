"""Run TRL's GRPOTrainer where its Triton kernel cannot: a plain-torch log-prob head for CPU.

TRL 1.15 patches the model with a fused LM head that computes per-token log-probabilities
(and entropy) with a Triton kernel, `trl.kernels.ChunkedLogProbFunction`. Triton ships with
CUDA builds of torch only, so on a CPU-only torch that kernel is `None` and the first
training step fails with "'NoneType' object has no attribute 'apply'". `install_torch_logprob_head()`
puts `TorchChunkedLogProb` in its place when, and only when, the Triton kernel cannot run:
same inputs, same five outputs, computed with ordinary torch ops in token chunks and
differentiated by autograd. GPU runs keep TRL's kernel untouched.

What is left out: the memory savings of the fused kernel (this one materialises
`chunk x vocab` logits per chunk), which matter only at GPU scale.
"""

from __future__ import annotations

import torch
from trl.trainer import utils

TOKEN_CHUNK = 1024


class TorchChunkedLogProb:
    """Drop-in for `trl.kernels.ChunkedLogProbFunction.apply` in plain torch."""

    @staticmethod
    def apply(
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        temperature: float,
        chunk_size: int,
        final_logit_softcapping: float | None = None,
        logit_scale: float = 1.0,
        outputs: tuple[str, ...] = ("entropy",),
    ):
        logps, entropies, sq, means, top1 = [], [], [], [], []
        for start in range(0, hidden.shape[0], TOKEN_CHUNK):
            h = hidden[start : start + TOKEN_CHUNK]
            z = torch.nn.functional.linear(h, weight, bias).float() * logit_scale
            if final_logit_softcapping is not None:
                z = final_logit_softcapping * torch.tanh(z / final_logit_softcapping)
            z = z / temperature
            log_p = z.log_softmax(-1)
            target = targets[start : start + TOKEN_CHUNK]
            logps.append(log_p.gather(-1, target[:, None]).squeeze(-1))
            if "entropy" in outputs:
                entropies.append(-(log_p.exp() * log_p).sum(-1))
            if "log_sum_sq_probs" in outputs:
                sq.append(torch.logsumexp(2 * log_p, dim=-1).detach())
            if "mean_logits" in outputs:
                means.append(z.mean(-1).detach())
            if "is_top1" in outputs:
                top1.append(z.argmax(-1) == target)

        def cat(parts: list[torch.Tensor]) -> torch.Tensor | None:
            return torch.cat(parts) if parts else None

        return cat(logps), cat(entropies), cat(sq), cat(means), cat(top1)


def install_torch_logprob_head() -> bool:
    """Install `TorchChunkedLogProb` into TRL if its Triton kernel cannot run (no Triton, or
    no CUDA device: a CUDA Triton beside a CPU torch, as some packages pull it in, imports
    but has no CPU backend); True if installed."""
    if utils._ChunkedLogProbFunction is not None and torch.cuda.is_available():
        return False
    utils._ChunkedLogProbFunction = TorchChunkedLogProb
    return True
