"""The CPU log-prob head: the same log-probs, entropies and gradients as the whole-batch
computation it replaces, in chunks, and nothing of `tokens x vocab` kept for backward."""

from __future__ import annotations

import pytest
import torch

from tbrl_lib.policies import logprob_head
from tbrl_lib.policies.logprob_head import TorchChunkedLogProb, reference_logprobs


def tiny_head(tokens: int = 37, hidden: int = 12, vocab: int = 50, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    h = torch.randn(tokens, hidden, generator=gen, dtype=torch.float64).requires_grad_()
    w = torch.randn(vocab, hidden, generator=gen, dtype=torch.float64).requires_grad_()
    b = torch.randn(vocab, generator=gen, dtype=torch.float64).requires_grad_()
    targets = torch.randint(0, vocab, (tokens,), generator=gen)
    # weights of a loss that uses both outputs, so both gradients are checked
    g_logp = torch.randn(tokens, generator=gen, dtype=torch.float64)
    g_ent = torch.randn(tokens, generator=gen, dtype=torch.float64)
    return h, w, b, targets, g_logp, g_ent


def grads(loss: torch.Tensor, *tensors: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.autograd.grad(loss, tensors))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunked_head_equals_the_whole_batch_computation(monkeypatch, temperature):
    monkeypatch.setattr(logprob_head, "CHUNK_ELEMENTS", 50 * 16)  # 16-token chunks: 3 of them
    h, w, b, targets, g_logp, g_ent = tiny_head()
    want_logp, want_ent = reference_logprobs(h, w, b, targets, temperature)
    got_logp, got_ent, *rest = TorchChunkedLogProb.apply(
        h, w, b, targets, temperature, 4096, None, 1.0, ("entropy",)
    )
    assert rest == [None, None, None]
    torch.testing.assert_close(got_logp, want_logp.float(), atol=1e-5, rtol=0)
    torch.testing.assert_close(got_ent, want_ent.float(), atol=1e-5, rtol=0)
    want = grads((want_logp * g_logp + want_ent * g_ent).sum(), h, w, b)
    got = grads((got_logp * g_logp + got_ent * g_ent).sum(), h, w, b)
    for name, x, y in zip(("hidden", "weight", "bias"), got, want, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=0, msg=f"gradient of {name}")


def test_log_probs_alone_and_a_frozen_head(monkeypatch):
    # TRL asks for log-probs only when the loss has no entropy term; LoRA freezes the head.
    monkeypatch.setattr(logprob_head, "CHUNK_ELEMENTS", 50 * 16)
    h, w, b, targets, g_logp, _ = tiny_head(seed=1)
    w, b = w.detach(), b.detach()
    logp, entropy, *_ = TorchChunkedLogProb.apply(h, w, b, targets, 1.0, 4096, None, 1.0, ())
    assert entropy is None
    want_logp, _ = reference_logprobs(h, w, b, targets)
    (got,) = grads((logp * g_logp).sum(), h)
    (want,) = grads((want_logp * g_logp).sum(), h)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_softcap_and_scale_follow_trls_order(monkeypatch):
    monkeypatch.setattr(logprob_head, "CHUNK_ELEMENTS", 50 * 16)
    h, w, b, targets, g_logp, g_ent = tiny_head(seed=2)
    cap, scale, temperature = 5.0, 0.5, 0.9
    z = cap * torch.tanh(torch.nn.functional.linear(h, w, b) * scale / cap) / temperature
    log_p = z.log_softmax(-1)
    want_logp = log_p.gather(-1, targets[:, None]).squeeze(-1)
    want_ent = -(log_p.exp() * log_p).sum(-1)
    got_logp, got_ent, sq, means, top1 = TorchChunkedLogProb.apply(
        h, w, b, targets, temperature, 4096, cap, scale, ("entropy", "mean_logits", "is_top1")
    )
    torch.testing.assert_close(got_logp, want_logp.float(), atol=1e-5, rtol=0)
    torch.testing.assert_close(means, z.mean(-1).float(), atol=1e-5, rtol=0)
    assert sq is None and torch.equal(top1, z.argmax(-1) == targets)
    want = grads((want_logp * g_logp + want_ent * g_ent).sum(), h, w, b)
    got = grads((got_logp * g_logp + got_ent * g_ent).sum(), h, w, b)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=0)


def test_backward_keeps_no_tokens_by_vocab_tensor():
    # What autograd saves for backward: the whole-batch head saves tokens x vocab tensors,
    # the chunked one only the inputs and a float per token.
    tokens, vocab = 600, 5000
    h = torch.randn(tokens, 16, requires_grad=True)
    w = torch.randn(vocab, 16)
    targets = torch.randint(0, vocab, (tokens,))

    def saved_elements(fn) -> int:
        sizes: list[int] = []

        def pack(x: torch.Tensor) -> torch.Tensor:
            sizes.append(x.numel())
            return x

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            fn()
        return max(sizes)

    whole = saved_elements(lambda: reference_logprobs(h, w, None, targets))
    chunked = saved_elements(
        lambda: TorchChunkedLogProb.apply(h, w, None, targets, 1.0, 4096, None, 1.0, ("entropy",))
    )
    assert whole == tokens * vocab
    assert chunked == vocab * 16  # the head's weight; nothing tokens x vocab
