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
  scores (B x max_tokens_per_turn x vocab x 4 B: `generate` keeps each token's fp32 scores,
  `HFBackend` takes their log-softmax one step at a time). With
  `vllm-server` the generation runs on the server's own GPUs: nothing is added.
- On CPU (`launch.gpus_per_node: 0`) the plan is of the process's resident memory, with
  the same activations (torch's CPU attention keeps no T^2 scores; the allocator returns
  freed memory: `process_memory.return_freed_memory`). TRL's fused head is replaced by
  `policies.logprob_head.TorchChunkedLogProb`, which holds one chunk of logits at a time
  (`HEAD_CHUNK_ELEMENTS` x 4 B, `HEAD_CHUNK_COPIES` times) beside the scored hidden states
  and their gradient; the process itself (Python, torch, transformers, TRL, the Docker
  client, the tokenizer) adds `CPU_RUNTIME_GIB`.

Phases (`MemoryPlan.phases`, the names `train()` times): `grpo` is the step above, or on a
synchronous HF run the trainer's fixed rows plus the rollouts' generation where that is
larger; an evaluation (`base evaluation`, `warm start evaluation`) is the runtime, a model
loaded from its checkpoint and its generation over launch.sandbox_concurrency episodes;
`final evaluation` adds the trainer's weights, gradients and optimizer, still held; `warm
start` is a training step over sft.batch_size demonstrations at full length before the run,
and over its largest batch of recorded demonstrations in summary.json (they are known before
the SFT trains). `phase_memory`
measures each phase's peak in a run (the kernel's high-water mark), summary.json `memory`
puts it beside this plan, and a phase more than 15% over its plan prints one line. The plan
is of full-length batches; each phase also notes the largest batches it ran
(`tbrl_lib.process_memory`), and `memory_report` plans it again at them (`reached`): the
formulas' own check, where replies that stop early would make any bound look loose.

Generation is bounded by memory: one batched HF generation holds at most
`generation_token_budget` tokens (what the capacity leaves beside the models and the
trainer's state, over a token's KV cache and working set; on CPU the machine's memory), so
more concurrent episodes than fit wait for the next batch instead of failing; a GPU plan
counts the bounded batch (`generation_batch`: 1xh200-async at 12 episodes generates 8 at a
time). CPU plans count `launch.sandbox_concurrency` episodes (the budget depends on the
machine, the plan does not).

It is an estimate to catch presets that cannot fit, not a promise that one does: CUDA
context, allocator fragmentation and NCCL buffers (a few GB) are not counted. What is left
out: CPU/NVMe offload, sequence parallelism, quantised (QLoRA) weights. How the plan compares
with measured peaks, on CPU and on one H200: docs/benchmarks.md, "Memory" and "One GPU".
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import psutil

from tbrl_lib.models import PACKAGED, model_config
from tbrl_lib.process_memory import RunClock
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.plan.phase_memory import over_plan, phase_table

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
    """(component, GiB per GPU, how it was counted) of a GRPO step."""
    capacity_gib: float
    phases: dict[str, float] = field(default_factory=dict)
    """Planned peak GiB of each phase of `train()` (`phase_plan`)."""

    @property
    def total_gib(self) -> float:
        """The GRPO step's total."""
        return sum(gib for _, gib, _ in self.rows)

    @property
    def peak_gib(self) -> float:
        """The largest phase (the step's total where no phase is planned)."""
        return max([self.total_gib, *self.phases.values()])

    @property
    def fits(self) -> bool:
        return self.capacity_gib <= 0 or self.peak_gib <= self.capacity_gib

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
        lines.append(f"{'total':<12} {self.total_gib:>9.2f}  a GRPO step")
        lines += [f"{'phase':<12} {'GiB':>9}", *self._phase_lines()]
        lines.append(f"{'peak':<12} {self.peak_gib:>9.2f}  capacity {cap}: {verdict}")
        return "\n".join(lines)

    def _phase_lines(self) -> list[str]:
        return [f"  {name:<22} {gib:>6.2f}" for name, gib in self.phases.items()]


CPU_RUNTIME_GIB = 0.8
"""Resident memory of a training process before the model: torch, transformers, TRL,
datasets, a tokenizer, a Docker client (docs/benchmarks.md, "Where the planner's constants
come from")."""
HEAD_CHUNK_ELEMENTS = 2**24
"""Logits per chunk of the CPU log-prob head (`trl_compat`; 64 MiB in fp32)."""
HEAD_CHUNK_COPIES = 4
"""Chunk-sized fp32 tensors alive at once in that head's backward (logits, log-probs,
probabilities, their gradient)."""
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


def plan_memory(
    config: TrainConfig,
    shape: ModelShape | None = None,
    sft_tokens: int | None = None,
    reached: Mapping[str, int] | None = None,
) -> MemoryPlan:
    """Per-GPU memory estimate of `config` (see the module docstring for the rules): the rows
    of a GRPO step, and the peak of each phase of `train()`. `sft_tokens`: the warm start's
    largest batch in tokens once its demonstrations are recorded (default: full length).
    `reached`: the largest batches a phase ran (`tbrl_lib.process_memory`), planned instead of
    full-length ones."""
    model, launch = config.model, config.launch
    shape = shape or model_shape(model.name)
    b, shards = dtype_bytes(config), weight_shards(config)
    reached = reached or {}
    tokens = reached.get("training_tokens") or (
        config.rollout.episode.max_total_tokens * config.grpo.per_device_batch_size
    )
    rows = training_rows(config, shape, b, shards, tokens)
    fixed = [r for r in rows if r[0] not in ("activations", "logits")]
    if launch.cpu:
        rows.append(("runtime", CPU_RUNTIME_GIB, "Python, torch, Docker client... (process)"))
    if launch.generation_backend == "vllm-colocate":
        share = launch.vllm_gpu_memory_utilization
        rows.append(("vllm", share * launch.gpu_memory_gb, f"colocate, {share:.0%} of GPU"))
    if config.grpo.async_rollouts and launch.generation_backend == "hf":
        rows += worker_rows(config, shape, b)
    phases = phase_plan(config, shape, b, shards, rows, fixed, sft_tokens, reached)
    return MemoryPlan(config.preset, rows, launch.gpu_memory_gb, phases)


def dtype_bytes(config: TrainConfig) -> int:
    """Bytes a weight or activation takes: fp32 on CPU or when asked, else bf16/fp16."""
    return 4 if config.model.dtype == "fp32" or config.launch.cpu else 2


def weight_shards(config: TrainConfig) -> int:
    """Processes the trainer's weights are sharded over (ZeRO-3, FSDP2), else 1."""
    launch = config.launch
    return launch.num_processes if launch.distributed in ("zero3", "fsdp2") else 1


def training_rows(
    config: TrainConfig, shape: ModelShape, b: int, shards: int, tokens: int
) -> list[tuple[str, float, str]]:
    """Weights, gradients, optimizer, activations and the log-prob head of a training step
    over micro-batches of `tokens` tokens (GRPO's, or the warm start's)."""
    model, launch = config.model, config.launch
    params = shape.parameters()
    trainable = shape.lora_parameters(model.lora_rank) if model.use_lora else params
    if config.grpo.optimizer == "sgd":  # torch's SGD without momentum keeps no state
        mixed = b == 2 and (shards > 1 or model.use_lora)
        opt_bytes, opt_basis = (4, "fp32 master, SGD") if mixed else (0, "none (SGD)")
    elif b == 4:
        opt_bytes, opt_basis = 8, "2 fp32 moments"
    elif shards > 1 or model.use_lora:
        opt_bytes, opt_basis = 12, "fp32 master + 2 fp32 moments"
    else:
        opt_bytes, opt_basis = 2 * b, "2 moments in param dtype"
    per_token = layer_bytes_per_token(shape, b)
    if model.gradient_checkpointing:
        activations = shape.layers * tokens * shape.hidden * b + tokens * per_token
        act_basis = f"checkpointed, {tokens:,} tokens"
    else:
        activations = shape.layers * tokens * per_token
        act_basis = f"all layers kept, {tokens:,} tokens"
    if launch.cpu:
        logits = (cpu_head_bytes(shape, tokens), "chunked torch head")
    else:
        logits = (logits_bytes(shape, tokens, b), "fused head tiles")
    return [
        ("weights", params * b / shards / GIB, f"{params / 1e9:.2f}B params / {shards} shard(s)"),
        ("gradients", trainable * b / shards / GIB, f"{trainable / 1e6:,.1f}M trainable"),
        ("optimizer", trainable * opt_bytes / shards / GIB, opt_basis),
        ("activations", activations / GIB, act_basis),
        ("logits", logits[0] / GIB, f"{logits[1]}, vocab {shape.vocab:,}"),
    ]


def phase_plan(
    config: TrainConfig,
    shape: ModelShape,
    b: int,
    shards: int,
    rows: list[tuple[str, float, str]],
    fixed: list[tuple[str, float, str]],
    sft_tokens: int | None = None,
    reached: Mapping[str, int] | None = None,
) -> dict[str, float]:
    """The planned peak (GiB) of each phase `train()` runs (`run.py`'s names): the GRPO step
    (`rows`), or the rollouts' generation on the trainer's model where that is larger; an
    evaluation: a model loaded from a checkpoint and its generation batch (the final one
    beside the trainer's state, `fixed`); the warm start: a training step over
    `sft.batch_size` demonstrations at full length (`sft_tokens`: the recorded ones' largest
    batch). Generation batches are full-length ones unless `reached` says otherwise."""
    launch, episode = config.launch, config.rollout.episode
    runtime = CPU_RUNTIME_GIB if launch.cpu else 0.0
    trained = sum(gib for _, gib, _ in fixed)
    step = sum(gib for _, gib, _ in rows)
    reached = reached or {}
    batch = reached.get("generation_episodes") or generation_batch(config)
    context = reached.get("generation_context") or episode.max_total_tokens
    new_tokens = reached.get("generation_new") or episode.max_tokens_per_turn
    generate = sum(generation_parts(shape, batch, context, new_tokens, b)[:2]) / GIB
    phases = {"grpo": step}
    if launch.generation_backend == "hf" and not config.grpo.async_rollouts:
        working = sum(gib for name, gib, _ in rows if name in ("activations", "logits"))
        phases["grpo"] = max(step, step - working + generate)
    evaluated = config.data.families and config.heldout.instances
    evaluation = runtime + shape.parameters() * b / GIB + generate
    if evaluated:
        phases["base evaluation"] = evaluation
    if config.sft.demos:
        sft_tokens = sft_tokens or config.sft.batch_size * episode.max_total_tokens
        phases["warm start"] = runtime + sum(
            gib for _, gib, _ in training_rows(config, shape, b, shards, sft_tokens)
        )
        if evaluated:
            phases["warm start evaluation"] = evaluation
    if evaluated:
        phases["final evaluation"] = evaluation + trained
    return {name: round(gib, 2) for name, gib in phases.items()}


def layer_bytes_per_token(shape: ModelShape, b: int) -> int:
    """One layer's working set per token: 8 hidden-sized and 3 intermediate-sized values."""
    return b * (8 * shape.hidden + 3 * shape.intermediate)


def cpu_head_bytes(shape: ModelShape, tokens: int) -> int:
    """`policies.logprob_head.TorchChunkedLogProb`: a chunk's fp32 logits `HEAD_CHUNK_COPIES` times, the
    scored hidden states and their gradient, and one head-sized fp32 buffer (the head's
    gradient when it trains, and present with a frozen head too: docs/benchmarks.md, "Where
    the planner's constants come from")."""
    chunk = min(HEAD_CHUNK_ELEMENTS, tokens * shape.vocab) * 4 * HEAD_CHUNK_COPIES
    return chunk + 2 * tokens * shape.hidden * 4 + shape.vocab * shape.hidden * 4


def generation_parts(
    shape: ModelShape, batch: int, context: int, new_tokens: int, b: int
) -> tuple[int, int, str]:
    """`HFBackend.generate` over `batch` episodes of `context` tokens each, the last
    `new_tokens` of them generated: (KV cache bytes, working set bytes, its basis); the
    working set is the larger of the prefill (one layer's working set) and the sampled
    tokens' fp32 scores (`generate` keeps each step's; `HFBackend` takes their log-softmax
    one step at a time, so once, plus a step's)."""
    kv = batch * context * 2 * shape.layers * shape.kv_heads * shape.head_dim * b
    prefill = batch * context * layer_bytes_per_token(shape, b)
    scores = batch * (new_tokens + 2) * shape.vocab * 4
    basis = "sampling scores" if scores >= prefill else "prefill, one layer"
    return kv, max(prefill, scores), basis


def generation_batch(config: TrainConfig) -> int:
    """Episodes one HF generation batch holds at full length: `launch.sandbox_concurrency`,
    fewer where `generation_token_budget` of the GPU's memory bounds it."""
    launch, context = config.launch, config.rollout.episode.max_total_tokens
    budget = None if launch.cpu else generation_token_budget(config, launch.gpu_memory_gb)
    return (
        launch.sandbox_concurrency
        if budget is None
        else min(launch.sandbox_concurrency, max(1, budget // context))
    )


GENERATION_HEADROOM = 0.9
"""The share of the capacity a generation batch may fill beside what is already held."""


def generation_token_budget(config: TrainConfig, capacity_gib: float | None = None) -> int | None:
    """The most tokens (episodes x padded length) one batched HF generation may hold on a
    machine of `capacity_gib` (default: the GPU's `launch.gpu_memory_gb`, on CPU this
    machine's memory): `GENERATION_HEADROOM` of it, less what is held while it generates,
    over what a token costs (KV cache and working set, `generation_parts` of one full-length
    episode). Held: between steps and in an evaluation, the runtime, a loaded model and the
    trainer's weights, gradients and optimizer (the final evaluation holds them all); with
    `grpo.async_rollouts`, a whole training step and the worker's copy of the policy. At
    least one full episode; None: no limit (a model of unknown shape, no capacity)."""
    if capacity_gib is None:
        launch = config.launch
        capacity_gib = psutil.virtual_memory().total / GIB if launch.cpu else launch.gpu_memory_gb
    try:
        shape = model_shape(config.model.name)
    except ValueError:
        return None
    if capacity_gib <= 0:
        return None
    b, episode = dtype_bytes(config), config.rollout.episode
    tokens = episode.max_total_tokens * config.grpo.per_device_batch_size
    rows = training_rows(config, shape, b, weight_shards(config), tokens)
    held = CPU_RUNTIME_GIB if config.launch.cpu else 0.0
    if config.grpo.async_rollouts:
        held += sum(gib for _, gib, _ in rows) + worker_copy_bytes(config, shape, b) / GIB
    else:
        held += shape.parameters() * b / GIB + sum(gib for _, gib, _ in rows[:3])
    context = episode.max_total_tokens
    per_token = (
        sum(generation_parts(shape, 1, context, episode.max_tokens_per_turn, b)[:2]) / context
    )
    free = (capacity_gib * GENERATION_HEADROOM - held) * GIB
    return max(int(free / per_token), episode.max_total_tokens)


def worker_copy_bytes(config: TrainConfig, shape: ModelShape, b: int) -> int:
    """The asynchronous HF worker's copy of the policy: every parameter, a LoRA adapter's in
    fp32."""
    model = config.model
    adapter = shape.lora_parameters(model.lora_rank) * 4 if model.use_lora else 0
    return shape.parameters() * b + adapter


def worker_rows(config: TrainConfig, shape: ModelShape, b: int) -> list[tuple[str, float, str]]:
    """The asynchronous HF worker's rows: its copy of the policy, the KV cache of its batch
    (`generation_batch` episodes) and its working set (`generation_parts`)."""
    model, episode = config.model, config.rollout.episode
    batch = generation_batch(config)
    what = "async: the policy's copy" + (" + fp32 LoRA" if model.use_lora else "")
    kv, working, basis = generation_parts(
        shape, batch, episode.max_total_tokens, episode.max_tokens_per_turn, b
    )
    return [
        ("worker copy", worker_copy_bytes(config, shape, b) / GIB, what),
        ("worker kv", kv / GIB, f"{batch} episodes x {episode.max_total_tokens:,} tokens"),
        ("worker gen", working / GIB, f"{basis}, {batch} episodes"),
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


def memory_report(
    config: TrainConfig, clock: RunClock | None = None, sft_tokens: int | None = None
) -> dict[str, Any]:
    """summary.json `memory`: the plan's peak beside the measured peak; with the run's
    `clock`, per phase (`phases`: planned and peak GiB, and where the phase noted its largest
    batches, `reached` and the plan at them, `reached_plan_gib`), the peak of GRPO's steps
    (`steps`), GRPO's plan at each step's own largest batches (`steps_reached_plan`: a step
    of short replies peaks lower than one of long ones), what stayed resident after each
    (`steps_resident`: growth is read here), and a line for each phase over its plan by more
    than 15% (`over_plan`). `sft_tokens`: the warm start's
    largest batch as recorded (its phase planned from it, not full length)."""
    try:
        plan: MemoryPlan | None = plan_memory(config, sft_tokens=sft_tokens)
    except ValueError:
        plan = None
    report: dict[str, Any] = {
        "plan_gib": round(plan.peak_gib, 2) if plan else None,
        **{k: round(v, 2) for k, v in measured_peak_gib().items()},
    }
    if clock is not None:  # its resets lower ru_maxrss too: the run's peak is its phases'
        peaks = [report["peak_rss_gib"], *clock.peaks.values(), *clock.steps]
        report["peak_rss_gib"] = round(max(peaks), 2)
        report["phases"] = phase_table(plan.phases if plan else {}, clock)

        def planned_at(reached: dict[str, int], phase: str) -> float | None:
            """The phase's plan at the batches it reached (None: no plan, or nothing ran)."""
            if not (plan and reached):
                return None
            return plan_memory(config, sft_tokens=sft_tokens, reached=reached).phases.get(phase)

        for name, reached in clock.shapes.items():
            if plan:
                report["phases"][name] |= {
                    "reached_plan_gib": planned_at(reached, name),
                    "reached": reached,
                }
        report["steps"] = clock.steps
        report["steps_reached_plan"] = [planned_at(shape, "grpo") for shape in clock.step_shapes]
        report["steps_resident"] = clock.resident
        report["over_plan"] = over_plan(report["phases"])
    return report
