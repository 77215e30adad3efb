"""A per-token log-prob head for causal LMs in plain torch: `TorchChunkedLogProb` computes
each target token's log-probability and the entropy from the last hidden states and the LM
head's weight, chunk by chunk (TRL's fused head's contract: same inputs, same five outputs;
`tbrl_lib.train.model.trl_compat` installs it where TRL's Triton kernel cannot run).

Like the kernel, it never holds a `tokens x vocab` tensor beyond one chunk: forward computes
each chunk's logits, keeps the target's log-prob and the entropy (a float per token) and
drops the logits; backward recomputes them chunk by chunk and applies the closed-form
gradients (d logp/dz = onehot - p; d entropy/dz = -p (log p + entropy)). What it saves for
backward is the hidden states and each token's log-sum-exp. The autograd version before it
kept fp32 log-probs and probabilities of every token of the micro-batch for backward
(8 x vocab bytes a token: 1.5 GiB for SmolLM2 at 4,096 tokens; `benchmarks/bench_memory.py
head` measures both). `reference_logprobs` is that plain computation, kept for the tests.
"""

from __future__ import annotations

import torch

CHUNK_ELEMENTS = 2**24
"""Logits per chunk (64 MiB in fp32): 341 tokens of SmolLM2's 49,152-token vocabulary."""


def chunk_tokens(vocab: int) -> int:
    """Tokens per chunk for a vocabulary of `vocab` (at least 16)."""
    return max(16, CHUNK_ELEMENTS // vocab)


def _logits(h, weight, bias, temperature, softcap, scale):
    """Tempered fp32 logits of a chunk, and the softcap's tanh (for backward) or None."""
    z = torch.nn.functional.linear(h, weight, bias).float() * scale
    tanh = None
    if softcap is not None:
        tanh = torch.tanh(z / softcap)
        z = softcap * tanh
    return z / temperature, tanh


class _ChunkedHead(torch.autograd.Function):
    """Log-probs of `targets` and entropies under `hidden @ weight.T + bias`, chunk by chunk."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, temperature, softcap, scale, want_entropy):
        step = chunk_tokens(weight.shape[0])
        logps, entropies, lses = [], [], []
        for start in range(0, hidden.shape[0], step):
            z, _ = _logits(hidden[start : start + step], weight, bias, temperature, softcap, scale)
            lse = z.logsumexp(-1)
            logps.append(z.gather(-1, targets[start : start + step, None]).squeeze(-1) - lse)
            if want_entropy:
                entropies.append(lse - (z.softmax(-1) * z).sum(-1))
            lses.append(lse)
        ctx.save_for_backward(hidden, weight, bias, targets, torch.cat(lses))
        ctx.args = (temperature, softcap, scale, step)
        entropy = torch.cat(entropies) if want_entropy else hidden.new_zeros(0, dtype=torch.float)
        return torch.cat(logps), entropy

    @staticmethod
    def backward(ctx, grad_logp, grad_entropy):
        hidden, weight, bias, targets, lses = ctx.saved_tensors
        temperature, softcap, scale, step = ctx.args
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        grad_h = torch.zeros_like(hidden) if need_h else None
        grad_w = torch.zeros_like(weight, dtype=torch.float) if need_w else None
        grad_b = torch.zeros_like(bias, dtype=torch.float) if need_b else None
        with_entropy = grad_entropy is not None and grad_entropy.numel() > 0
        for start in range(0, hidden.shape[0], step):
            rows = slice(start, start + step)
            h = hidden[rows]
            z, tanh = _logits(h, weight, bias, temperature, softcap, scale)
            log_p = z - lses[rows, None]
            p = log_p.exp()
            dz = -p * grad_logp[rows, None]
            dz.scatter_add_(-1, targets[rows, None], grad_logp[rows, None])
            if with_entropy:
                entropy = -(p * log_p).sum(-1, keepdim=True)
                dz -= p * (log_p + entropy) * grad_entropy[rows, None]
            dz = dz / temperature
            if tanh is not None:
                dz = dz * (1 - tanh * tanh)
            dz = dz * scale
            if need_h:
                grad_h[rows] = (dz.to(h.dtype) @ weight).to(hidden.dtype)
            if need_w:
                grad_w += dz.T @ h.float()
            if need_b:
                grad_b += dz.sum(0)
        return (
            grad_h,
            grad_w.to(weight.dtype) if need_w else None,
            grad_b.to(bias.dtype) if need_b else None,
            *([None] * 5),
        )


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
        """The five outputs of TRL's kernel; `chunk_size` (the kernel's tile) is not used:
        chunks here hold `CHUNK_ELEMENTS` logits. The last three are detached, as there."""
        args = (temperature, final_logit_softcapping, logit_scale)
        logps, entropy = _ChunkedHead.apply(
            hidden, weight, bias, targets, *args, "entropy" in outputs
        )
        extra = tuple(n for n in ("log_sum_sq_probs", "mean_logits", "is_top1") if n in outputs)
        found: dict[str, list[torch.Tensor]] = {n: [] for n in extra}
        if extra:
            with torch.no_grad():
                step = chunk_tokens(weight.shape[0])
                for start in range(0, hidden.shape[0], step):
                    z, _ = _logits(hidden[start : start + step], weight, bias, *args)
                    if "log_sum_sq_probs" in found:
                        found["log_sum_sq_probs"].append(
                            torch.logsumexp(2 * z.log_softmax(-1), dim=-1)
                        )
                    if "mean_logits" in found:
                        found["mean_logits"].append(z.mean(-1))
                    if "is_top1" in found:
                        found["is_top1"].append(z.argmax(-1) == targets[start : start + step])
        sq, means, top1 = (
            torch.cat(found[n]) if n in found else None
            for n in ("log_sum_sq_probs", "mean_logits", "is_top1")
        )
        return logps, entropy if "entropy" in outputs else None, sq, means, top1


def reference_logprobs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    targets: torch.Tensor,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of `targets` and entropies, the whole batch at once through autograd (what the
    chunked head replaces; it keeps `tokens x vocab` tensors for backward)."""
    log_p = (torch.nn.functional.linear(hidden, weight, bias).float() / temperature).log_softmax(-1)
    return log_p.gather(-1, targets[:, None]).squeeze(-1), -(log_p.exp() * log_p).sum(-1)
