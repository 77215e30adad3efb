"""Run TRL's GRPOTrainer where its Triton kernel cannot: a plain-torch log-prob head for CPU.

TRL 1.15 patches the model with a fused LM head that computes per-token log-probabilities
(and entropy) with a Triton kernel, `trl.kernels.ChunkedLogProbFunction`, its one seam
(`trl.trainer.utils._ChunkedLogProbFunction`). Triton ships with CUDA builds of torch only,
so on a CPU-only torch that kernel is `None` and the first training step fails with
"'NoneType' object has no attribute 'apply'". `install_torch_logprob_head()` puts
`TorchChunkedLogProb` in its place when, and only when, the Triton kernel cannot run: same
inputs, same five outputs, in ordinary torch ops. GPU runs keep TRL's kernel untouched.

The head itself is `tbrl_lib.policies.logprob_head` (torch calls it in the step's loss, not
this module).
"""

from __future__ import annotations

import torch
from trl.trainer import utils

from tbrl_lib.policies.logprob_head import TorchChunkedLogProb
from tbrl_lib.process_memory import return_freed_memory


def install_torch_logprob_head() -> bool:
    """Install `TorchChunkedLogProb` into TRL if its Triton kernel cannot run (no Triton, or
    no CUDA device: a CUDA Triton beside a CPU torch, as some packages pull it in, imports
    but has no CPU backend); True if installed."""
    if utils._ChunkedLogProbFunction is not None and torch.cuda.is_available():
        return False
    utils._ChunkedLogProbFunction = TorchChunkedLogProb
    return True


def install_memory_fixes() -> None:
    """What keeps a trainer within its memory plan, installed where TRL makes the model (the
    GRPO trainer, the warm start's SFT trainer): this head where TRL's Triton kernel cannot
    run, and freed tensors returned to the kernel (`return_freed_memory`). Gradient
    checkpointing is the model's own setting (`model.gradient_checkpointing`).
    `tests/train/test_memory_guard.py` holds a step of the trainer to the plan."""
    install_torch_logprob_head()
    return_freed_memory()
