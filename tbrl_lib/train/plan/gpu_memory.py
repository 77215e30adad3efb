"""Memory planner: will a preset fit on its GPUs? A per-GPU estimate, printed as a table.

The rules (all per GPU, `S` = training processes when weights are sharded by ZeRO-3 or
FSDP2, else 1; `C` = rollout.episode.max_total_tokens x grpo.per_device_batch_size; `b` = bytes of the
training dtype):

- weights: all parameters x b / S
- gradients: trainable parameters x b / S
- optimizer (AdamW): trainable x 12 B / S (fp32 master + two fp32 moments) with ZeRO-3/FSDP2
  mixed precision and for LoRA adapters (PEFT keeps them in fp32); trainable x 2b for plain
  full bf16/fp16 training (moments in the parameter dtype); trainable x 8 B in fp32. SGD
  (no momentum) keeps no state: only the fp32 master where AdamW has one, 4 B / S.
- activations: with gradient checkpointing, the layer inputs (layers x C x hidden x b) plus
  one layer's working set; without, every layer's working set. A layer's working set is
  C x b x (8 hidden + 3 intermediate) (flash attention: no C^2 term).
- logits: TRL's fused LM head never holds the full C x vocab logits (that alone would be
  ~10 GB at 32k tokens); it computes log-probs in tiles: one 4096-token x 32768-vocab tile
  in b, the fp32 gradient of the LM head (vocab x hidden x 4 B) and of the hidden states
  (C x hidden x 4 B).
- vLLM (colocate): launch.vllm_gpu_memory_utilization x GPU memory, reserved up front.
- The asynchronous worker (`grpo.async_rollouts` with `generation_backend: hf`), which
  generates on the training GPU while the step trains, so its memory adds to the step's:
  its copy of the policy (all parameters x b, plus a LoRA adapter's in fp32), the KV cache
  of a batch of B = launch.sandbox_concurrency episodes at full context (B x
  max_total_tokens x 2 x layers x kv_heads x head_dim x b), and the larger of the batch's
  prefill (one layer's working set over B x max_total_tokens tokens) and its sampling
  scores (B x max_tokens_per_turn x vocab x 4 B, three times: `generate` keeps each token's
  fp32 scores, `HFBackend` stacks them and takes their log-softmax). With `vllm-server` the
  generation runs on the server's own GPUs: nothing is added.
- On CPU (`launch.gpus_per_node: 0`) the plan is of the process's memory: TRL's fused head is
  replaced by `trl_compat.TorchChunkedLogProb`, which keeps, for backward, the fp32 logits,
  log-probs and probabilities of every token (C x vocab x 12 B), and the process itself
  (Python, torch, tokenizer) adds `CPU_RUNTIME_GIB`. `measured_peak_gib()` is what a run
  then reports beside it (peak RSS on CPU, peak allocated CUDA memory on a GPU).

It is an estimate to catch presets that cannot fit, not a promise that one does: CUDA
context, allocator fragmentation and NCCL buffers (a few GB) are not counted. What is left
out: CPU/NVMe offload, sequence parallelism, quantised (QLoRA) weights.

Checked on one H200 (`benchmarks/gpu_check.py`'s `full` variant, TRL 1.15, Qwen3-1.7B shape,
full bf16 fine-tuning, one 32k-token trajectory per micro-batch, checkpointing): measured
peak 21.3 GiB; this plan says 20.1 GiB.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass

from tbrl_lib.models import PACKAGED, model_config
from tbrl_lib.train.config.config import TrainConfig

GIB = 2**30


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a decoder-only transformer that decide its memory."""

    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied_embeddings: bool

    def parameters(self) -> int:
        """Parameter count of a Qwen3 decoder (q/k norms, no biases)."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h + 2 * self.head_dim
        mlp = 3 * h * self.intermediate
        layer = attention + mlp + 2 * h
        embeddings = self.vocab * h * (1 if self.tied_embeddings else 2)
        return embeddings + self.layers * layer + h

    def lora_parameters(self, rank: int) -> int:
        """LoRA parameters on q, k, v, o, gate, up, down of every layer: rank x (in + out) each."""
        h, q, kv, i = (
            self.hidden,
            self.heads * self.head_dim,
            self.kv_heads * self.head_dim,
            self.intermediate,
        )
        per_layer = (h + q) + 2 * (h + kv) + (q + h) + 3 * (h + i)
        return rank * per_layer * self.layers


KNOWN_SHAPES: dict[str, ModelShape] = {
    "Qwen/Qwen3-0.6B": ModelShape(1024, 28, 3072, 16, 8, 128, 151_936, True),
    "Qwen/Qwen3-1.7B": ModelShape(2048, 28, 6144, 16, 8, 128, 151_936, True),
    "Qwen/Qwen3-4B": ModelShape(2560, 36, 9728, 32, 8, 128, 151_936, True),
    "Qwen/Qwen3-8B": ModelShape(4096, 36, 12288, 32, 8, 128, 151_936, False),
    "Qwen/Qwen3-14B": ModelShape(5120, 40, 17408, 40, 8, 128, 151_936, False),
    "Qwen/Qwen3-32B": ModelShape(5120, 64, 25600, 64, 8, 128, 151_936, False),
    # Packaged models, so a plan needs no fetch (`tbrl_lib.models.PACKAGED`); the fetched
    # folder's config.json says the same (tests/models check it).
    "smollm2-135m": ModelShape(576, 30, 1536, 9, 3, 64, 49_152, True),
}


def shape_from_hf_config(config: dict) -> ModelShape:
    """A `ModelShape` from a transformers `config.json` dict."""
    heads = config["num_attention_heads"]
    return ModelShape(
        hidden=config["hidden_size"],
        layers=config["num_hidden_layers"],
        intermediate=config["intermediate_size"],
        heads=heads,
        kv_heads=config.get("num_key_value_heads", heads),
        head_dim=config.get("head_dim") or config["hidden_size"] // heads,
        vocab=config["vocab_size"],
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
    )


def model_shape(model: str) -> ModelShape:
    """Shape of a known hub id, else from the model's `config.json` through the resolver
    (`tiny...`: the builder's shape; a packaged name: its shape before or after the fetch;
    a folder: its file)."""
    if model in KNOWN_SHAPES:
        return KNOWN_SHAPES[model]
    config = model_config(model)
    if config is not None:
        return shape_from_hf_config(config)
    raise ValueError(
        f"memory planner does not know model {model!r}; use one of {sorted(KNOWN_SHAPES)}, "
        f"a packaged name ({', '.join(sorted(PACKAGED))}), `tiny[:size]` or a local model "
        "folder with a config.json"
    )


@dataclass(frozen=True)
class MemoryPlan:
    preset: str
    rows: list[tuple[str, float, str]]
    """(component, GiB per GPU, how it was counted)."""
    capacity_gib: float

    @property
    def total_gib(self) -> float:
        return sum(gib for _, gib, _ in self.rows)

    @property
    def fits(self) -> bool:
        return self.capacity_gib <= 0 or self.total_gib <= self.capacity_gib

    def table(self) -> str:
        lines = [
            f"memory plan for {self.preset} (GiB per GPU, estimate)",
            f"{'component':<12} {'GiB':>9}  basis",
        ]
        lines += [f"{name:<12} {gib:>9.2f}  {basis}" for name, gib, basis in self.rows]
        cap = f"{self.capacity_gib:.0f}" if self.capacity_gib > 0 else "n/a (CPU)"
        verdict = (
            "fits"
            if self.fits
            else "DOES NOT FIT: shard (zero3/fsdp2), use LoRA, or shorten context"
        )
        lines.append(f"{'total':<12} {self.total_gib:>9.2f}  capacity {cap}: {verdict}")
        return "\n".join(lines)


CPU_RUNTIME_GIB = 0.5
"""Resident memory of a training process before the model (Python, torch, transformers, TRL,
the tokenizer; measured here: 0.51 GiB after those imports and loading SmolLM2's tokenizer)."""
FUSED_TILE_TOKENS, FUSED_TILE_VOCAB = 4096, 32768
"""TRL 1.15's chunked log-prob kernel tile (trl.kernels.chunked_logprob)."""


def logits_bytes(shape: ModelShape, tokens: int, b: int) -> int:
    """Memory of TRL's fused LM head: one tile plus fp32 gradients of the head and hidden states."""
    tile = min(tokens, FUSED_TILE_TOKENS) * min(shape.vocab, FUSED_TILE_VOCAB) * b
    return tile + shape.vocab * shape.hidden * 4 + tokens * shape.hidden * 4


def plan_text(config: TrainConfig) -> str:
    """The plan's table, or one line saying why there is none (e.g. a model of unknown shape)."""
    try:
        return plan_memory(config).table()
    except ValueError as exc:
        return f"no memory plan for {config.preset}: {exc}"


def plan_memory(config: TrainConfig, shape: ModelShape | None = None) -> MemoryPlan:
    """Per-GPU memory estimate of `config` (see the module docstring for the rules)."""
    model, launch = config.model, config.launch
    shape = shape or model_shape(model.name)
    b = 4 if model.dtype == "fp32" else 2
    shards = launch.num_processes if launch.distributed in ("zero3", "fsdp2") else 1
    params = shape.parameters()
    trainable = shape.lora_parameters(model.lora_rank) if model.use_lora else params
    if config.grpo.optimizer == "sgd":  # torch's SGD without momentum keeps no state
        mixed = model.dtype != "fp32" and (shards > 1 or model.use_lora)
        opt_bytes, opt_basis = (4, "fp32 master, SGD") if mixed else (0, "none (SGD)")
    elif model.dtype == "fp32":
        opt_bytes, opt_basis = 8, "2 fp32 moments"
    elif shards > 1 or model.use_lora:
        opt_bytes, opt_basis = 12, "fp32 master + 2 fp32 moments"
    else:
        opt_bytes, opt_basis = 2 * b, "2 moments in param dtype"
    tokens = config.rollout.episode.max_total_tokens * config.grpo.per_device_batch_size
    layer_set = tokens * layer_bytes_per_token(shape, b)
    if model.gradient_checkpointing:
        activations = shape.layers * tokens * shape.hidden * b + layer_set
        act_basis = f"checkpointed, {tokens:,} tokens"
    else:
        activations = shape.layers * layer_set
        act_basis = f"all layers kept, {tokens:,} tokens"
    cpu = launch.cpu
    if cpu:
        logits = (tokens * shape.vocab * 12 + shape.vocab * shape.hidden * 4, "torch head")
    else:
        logits = (logits_bytes(shape, tokens, b), "fused head tiles")
    rows = [
        ("weights", params * b / shards / GIB, f"{params / 1e9:.2f}B params / {shards} shard(s)"),
        ("gradients", trainable * b / shards / GIB, f"{trainable / 1e6:,.1f}M trainable"),
        ("optimizer", trainable * opt_bytes / shards / GIB, opt_basis),
        ("activations", activations / GIB, act_basis),
        ("logits", logits[0] / GIB, f"{logits[1]}, vocab {shape.vocab:,}"),
    ]
    if cpu:
        rows.append(("runtime", CPU_RUNTIME_GIB, "Python, torch, tokenizer (process)"))
    if launch.generation_backend == "vllm-colocate":
        share = launch.vllm_gpu_memory_utilization
        rows.append(("vllm", share * launch.gpu_memory_gb, f"colocate, {share:.0%} of GPU"))
    if config.grpo.async_rollouts and launch.generation_backend == "hf":
        rows += worker_rows(config, shape, b)
    return MemoryPlan(config.preset, rows, launch.gpu_memory_gb)


def layer_bytes_per_token(shape: ModelShape, b: int) -> int:
    """One layer's working set per token: 8 hidden-sized and 3 intermediate-sized values."""
    return b * (8 * shape.hidden + 3 * shape.intermediate)


def worker_rows(config: TrainConfig, shape: ModelShape, b: int) -> list[tuple[str, float, str]]:
    """The asynchronous HF worker's rows: its copy of the policy, the KV cache of its batch,
    and the larger of the batch's prefill and its sampling scores (module docstring)."""
    model, episode = config.model, config.rollout.episode
    batch, context = config.launch.sandbox_concurrency, episode.max_total_tokens
    adapter = shape.lora_parameters(model.lora_rank) * 4 if model.use_lora else 0
    copy = shape.parameters() * b + adapter
    kv = batch * context * 2 * shape.layers * shape.kv_heads * shape.head_dim * b
    prefill = batch * context * layer_bytes_per_token(shape, b)
    scores = 3 * batch * episode.max_tokens_per_turn * shape.vocab * 4
    basis = "sampling scores x3" if scores >= prefill else "prefill, one layer"
    what = "async: the policy's copy" + (" + fp32 LoRA" if adapter else "")
    return [
        ("worker copy", copy / GIB, what),
        ("worker kv", kv / GIB, f"{batch} episodes x {context:,} tokens"),
        ("worker gen", max(prefill, scores) / GIB, f"{basis}, {batch} episodes"),
    ]


def measured_peak_gib() -> dict[str, float]:
    """What this process used at its peak: resident memory (CPU runs) and, where CUDA is
    initialised, the peak allocated GPU memory of this process's device."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    peak = {"peak_rss_gib": rss / (GIB if sys.platform == "darwin" else 2**20)}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        peak["peak_gpu_gib"] = torch.cuda.max_memory_allocated() / GIB
    return peak


def memory_report(config: TrainConfig) -> dict[str, float | None]:
    """The plan's total beside the measured peak (summary.json `memory`)."""
    try:
        planned: float | None = round(plan_memory(config).total_gib, 2)
    except ValueError:
        planned = None
    return {"plan_gib": planned, **{k: round(v, 2) for k, v in measured_peak_gib().items()}}
