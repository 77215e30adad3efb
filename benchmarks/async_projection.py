"""Steps per hour of sync vs async GRPO, projected: a seeded discrete-event simulation.

The two schedules it plays (issue 26), over C episode slots and a training step of `train_s`:

    sync   per step, rollouts_per_step episodes run C at a time (a freed slot takes the next
           episode at once), the step waits for its last episode, then trains; generation
           idles while the trainer trains and vice versa.
    async  the C slots are always fed FIFO from a queue of groups (num_generations episodes of
           one task). The queue starts with two steps' groups (the first step's tasks twice;
           `steps_ahead` > 1 queues more, a what-if); each time the trainer takes a batch, one
           more step's groups join it (none for steps past the last). A group is complete when its last episode ends. The trainer takes the FIRST
           completed groups a step needs, waiting while too few are complete, after dropping
           every complete group more than max_staleness optimizer steps behind (its version:
           steps taken when its first episode started); a dropped group's task goes to the
           front of the queue. Training runs beside generation, and the new weights reach the
           generator the moment a step ends (in-flight update, no pause; at a tie the update
           comes first). max_staleness 0 trains only groups started after the last update:
           every group started while the trainer trained is dropped and generated again. With
           equal episodes that is no faster than sync; under a long tail it still picks the
           first-completed of more groups than a step needs, so it can beat sync, wastefully.

`Projection` per mode: steps/hour, trainer utilisation (share of the wall time the trainer
computes), generator utilisation (mean share of the C slots running an episode), mean staleness
of trained groups, dropped share (dropped / (trained + dropped) groups).

Durations: `run_durations` reads a finished run's `trajectories/*.jsonl` (the `seconds` of every
rollout row); `empirical` samples them, `preset_shape` rescales their shape to a cluster's
median under its episode cap, `lognormal` is the long tail used without a run. `plan_preset`
turns a preset into the simulator's inputs under `ClusterAssumptions` (training seconds from a
FLOPs model, GPUs, C) and `PresetPlan.assumes` says each choice in a line.

Assumed throughout, and left out: an episode's duration does not depend on how many run at once
nor on the mode (vLLM and the sandbox nodes keep pace: KV-cache pressure and preemption are not
modelled); a weight update costs nothing; dynamic sampling's refill groups, held-out
evaluations and checkpoints are not played; tasks are interchangeable (no curriculum). What
staleness and taking the first-completed groups (which favours short episodes) do to learning
is outside its scope: it counts time, not quality.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import random
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from tbrl_lib.tasks.model import Limits
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.plan.launch import node_count
from tbrl_lib.train.plan.memory_plan import model_shape

Sampler = Callable[[random.Random], float]
"""Seconds of one episode, drawn with the simulation's own random generator."""
MODES = ("sync", "async")


# --- the simulation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """What one simulated run does, whichever the mode."""

    rollouts_per_step: int
    num_generations: int
    slots: int
    """C: episodes running at once at most."""
    train_s: float | Callable[[int], float]
    """Seconds the trainer computes for a step (a number, or a function of the step index)."""
    max_staleness: int = 1
    steps: int = 200
    steps_ahead: int = 1
    """Async: steps' worth of groups queued beyond the one being trained on (the design: 1;
    more is a what-if)."""

    def __post_init__(self) -> None:
        if self.rollouts_per_step % self.num_generations or self.rollouts_per_step < 1:
            raise ValueError(
                f"rollouts_per_step={self.rollouts_per_step} must be a positive multiple of "
                f"num_generations={self.num_generations}"
            )
        if min(self.slots, self.steps, self.steps_ahead) < 1 or self.max_staleness < 0:
            raise ValueError("slots, steps and steps_ahead must be >= 1, max_staleness >= 0")

    @property
    def groups_per_step(self) -> int:
        return self.rollouts_per_step // self.num_generations

    def train_seconds(self, step: int) -> float:
        return self.train_s(step) if callable(self.train_s) else float(self.train_s)


@dataclass(frozen=True)
class Projection:
    """One mode's numbers (a mean over seeds when `project` made it)."""

    mode: str
    steps_per_hour: float
    trainer_utilisation: float
    generator_utilisation: float
    staleness_mean: float
    dropped_share: float
    wall_s: float


def simulate_sync(work: Workload, sample: Sampler, seed: int = 0) -> Projection:
    """Generate a step's episodes C at a time, wait for the last, train; `steps` times."""
    rng = random.Random(seed)
    now = busy = trained = 0.0
    for step in range(work.steps):
        free_at = [now] * min(work.slots, work.rollouts_per_step)
        for _ in range(work.rollouts_per_step):
            start = heapq.heappop(free_at)
            seconds = sample(rng)
            busy += seconds
            heapq.heappush(free_at, start + seconds)
        train = work.train_seconds(step)
        now = max(free_at) + train
        trained += train
    return Projection("sync", 3600 * work.steps / now, trained / now,
                      busy / (work.slots * now), 0.0, 0.0, now)  # fmt: skip


@dataclass(eq=False)
class _Group:
    to_start: int
    running: int = 0
    version: int | None = None


class _AsyncRun:
    """The async schedule of the module docstring, event by event."""

    def __init__(self, work: Workload, sample: Sampler, seed: int) -> None:
        self.work, self.sample, self.rng = work, sample, random.Random(seed)
        self.queue: deque[_Group] = deque()
        self.complete: list[_Group] = []
        self.events: list[tuple[float, int, int, _Group | None]] = []
        """(time, 0 for the end of training / 1 for an episode's, order, its group or None):
        an update at the instant an episode ends reaches the episode started in its slot."""
        self.order = itertools.count()
        self.free, self.version, self.training = work.slots, 0, False
        self.episodes: list[tuple[float, float]] = []
        self.staleness: list[int] = []
        self.dropped = 0
        self.trained_s = 0.0

    def run(self) -> Projection:
        work = self.work
        self.queue.extend(self.new_groups((1 + work.steps_ahead) * work.groups_per_step))
        self.feed(0.0)
        now = 0.0
        while self.version < work.steps:
            now, _, _, group = heapq.heappop(self.events)
            if group is None:
                self.version, self.training = self.version + 1, False
            else:
                self.free, group.running = self.free + 1, group.running - 1
                if group.running == 0 and group.to_start == 0:
                    self.complete.append(group)
                self.feed(now)
            if not self.training and self.version < work.steps:
                self.take(now)
        busy = sum(min(end, now) - min(start, now) for start, end in self.episodes)
        taken = len(self.staleness)
        return Projection("async", 3600 * work.steps / now, self.trained_s / now,
                          busy / (work.slots * now), statistics.fmean(self.staleness),
                          self.dropped / (taken + self.dropped), now)  # fmt: skip

    def new_groups(self, count: int) -> list[_Group]:
        return [_Group(self.work.num_generations) for _ in range(count)]

    def feed(self, now: float) -> None:
        """Start queued episodes, front group first, while a slot is free."""
        while self.free and self.queue:
            group = self.queue[0]
            if group.version is None:
                group.version = self.version
            seconds = self.sample(self.rng)
            self.episodes.append((now, now + seconds))
            heapq.heappush(self.events, (now + seconds, 1, next(self.order), group))
            self.free -= 1
            group.running += 1
            group.to_start -= 1
            if group.to_start == 0:
                self.queue.popleft()

    def take(self, now: float) -> None:
        """Drop stale complete groups (requeued first); train on the first complete ones if
        there are enough, and queue one more step's groups."""
        step, need = self.version, self.work.groups_per_step
        fresh = [g for g in self.complete if step - g.version <= self.work.max_staleness]
        stale = len(self.complete) - len(fresh)
        if stale:
            self.dropped += stale
            self.queue.extendleft(self.new_groups(stale))
        self.complete = fresh
        if len(fresh) >= need:
            batch, self.complete = fresh[:need], fresh[need:]
            self.staleness.extend(step - g.version for g in batch)
            seconds = self.work.train_seconds(step)
            self.trained_s += seconds
            self.training = True
            heapq.heappush(self.events, (now + seconds, 0, next(self.order), None))
            if step + self.work.steps_ahead < self.work.steps:
                self.queue.extend(self.new_groups(need))
        self.feed(now)


def simulate_async(work: Workload, sample: Sampler, seed: int = 0) -> Projection:
    """The async schedule (module docstring) until `steps` steps have trained."""
    return _AsyncRun(work, sample, seed).run()


def project(work: Workload, sample: Sampler, seeds: list[int]) -> dict[str, Projection]:
    """Both modes, each the mean over `seeds`."""
    runs = {"sync": simulate_sync, "async": simulate_async}
    out = {}
    for mode, simulate in runs.items():
        each = [simulate(work, sample, seed) for seed in seeds]
        numbers = {
            f.name: statistics.fmean(getattr(p, f.name) for p in each)
            for f in fields(Projection)
            if f.name != "mode"
        }
        out[mode] = Projection(mode=mode, **numbers)
    return out


# --- episode durations ------------------------------------------------------------------------


def run_durations(folder: Path) -> list[float]:
    """The `seconds` of every rollout a finished run saved (`trajectories/*.jsonl`, one
    `step.runner.StepRollout` a line), zero-second rows left out."""
    files = sorted((Path(folder) / "trajectories").glob("*.jsonl"))
    seconds = [
        float(json.loads(line)["seconds"])
        for path in files
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    seconds = [s for s in seconds if s > 0]
    if not seconds:
        raise ValueError(
            f"{folder}: no rollouts with a duration under trajectories/*.jsonl; give the folder "
            "of a tbrl training run that took at least one step"
        )
    return seconds


def empirical(durations: list[float]) -> Sampler:
    """Draws, with replacement, from measured durations."""
    values = list(durations)
    return lambda rng: rng.choice(values)


def preset_shape(durations: list[float], median_s: float, cap_s: float) -> Sampler:
    """The measured shape, divided by its median, times `median_s`, capped at `cap_s`."""
    scale = median_s / statistics.median(durations)
    return empirical([min(d * scale, cap_s) for d in durations])


def lognormal(median_s: float, sigma: float, cap_s: float) -> Sampler:
    """median x exp(sigma x N(0, 1)), capped at `cap_s`."""
    return lambda rng: min(median_s * math.exp(sigma * rng.gauss(0.0, 1.0)), cap_s)


# --- a preset on a cluster --------------------------------------------------------------------

DEFAULT_AGENT_TIMEOUT_S = Limits.model_fields["agent_timeout_sec"].default
"""A task's agent time limit when it sets none (the cap when the preset sets no episode limit)."""


@dataclass(frozen=True)
class ClusterAssumptions:
    """The numbers a projection assumes rather than measures (each printed with the table)."""

    median_s: float = 300.0
    """Median episode seconds on the cluster: a Terminal-Bench task, ~20 turns at ~15 s each
    (~400 sampled tokens at ~35 tokens/s per sequence from vLLM under load, ~3 s of commands)."""
    sigma: float = 0.8
    """Lognormal sigma of episode seconds without a run folder (p90 = 2.8x, p99 = 6.4x median)."""
    tokens_per_rollout: int = 16_384
    """Tokens of one trajectory (prompt + replies + observations) the trainer forwards: half of
    the 32k context budget."""
    mfu: float = 0.35
    """Model FLOPs utilisation of training (the aim; one H200 measured 0.19)."""
    peak_flops: float = 989e12
    """Dense bf16 peak of an H100 (FLOP/s)."""
    colocate_serve_gpus: int = 4
    """Async on a vllm-colocate preset (refused: its GPUs cannot generate while they train):
    GPUs of the node given to a `vllm serve` beside training, as `launch.gpu_split` places one;
    4 of 8 keeps 64 rollouts per step (4 processes x 16 micro-steps)."""
    cpu_median_s: float = 1.7
    """cpu-demo episode median without a run folder (the 2-core probe run's, 2026-12-02)."""
    cpu_train_s: float = 5.0
    """cpu-demo training seconds per step without --train-s or an async run folder (README)."""


@dataclass(frozen=True)
class PresetPlan:
    """One preset in one mode, as the simulator takes it, and why."""

    preset: str
    mode: str
    train_gpus: int
    """Training processes' GPUs (0 on CPU)."""
    slots: int
    rollouts_per_step: int
    num_generations: int
    train_s: float
    cap_s: float
    median_s: float
    assumes: tuple[str, ...]

    def workload(self, steps: int, max_staleness: int, steps_ahead: int = 1) -> Workload:
        return Workload(self.rollouts_per_step, self.num_generations, self.slots,
                        self.train_s, max_staleness, steps, steps_ahead)  # fmt: skip


def episode_slots(config: TrainConfig) -> tuple[int, str]:
    """C, and how it follows from the preset. Each process runs `sandbox_concurrency` at a
    time, at most its engine's `max_concurrency` (docker backend, one engine per node); on the
    ray backend the job's cluster has `units_per_node` on each node for every process at once
    (preflight refuses more in flight), so the job's count is capped at the cluster's units."""
    launch, sandbox = config.launch, config.rollout.sandbox
    per_process = launch.sandbox_concurrency
    if sandbox.backend == "docker":
        per_process = min(per_process, sandbox.docker.max_concurrency)
    slots = per_process * launch.num_processes
    why = f"{per_process} per process x {launch.num_processes} process(es)"
    units = launch.units_per_node * node_count(config)
    if sandbox.backend == "ray" and slots > units:
        why += f" = {slots}, capped at the Ray cluster's {units} sandbox units"
        slots = units
    return slots, why


def training_flops(config: TrainConfig, tokens: int) -> tuple[float, str]:
    """FLOPs of one step's training: 6 x params x tokens for the update (4 with LoRA: no weight
    gradients), plus 2 x params x tokens per extra forward (old log-probs for the importance
    correction on vLLM or async; reference log-probs when beta > 0). Recomputation under
    gradient checkpointing is not counted (MFU counts model FLOPs)."""
    params = model_shape(config.model.name).parameters()
    update = 4 if config.model.use_lora else 6
    old_logps = config.launch.uses_vllm or config.grpo.async_rollouts
    forwards = int(old_logps) + int(config.grpo.beta > 0)
    factor = update + 2 * forwards
    return factor * params * tokens, f"{factor} x {params / 1e9:.1f}B params x {tokens:,} tokens"


def plan_preset(
    config: TrainConfig, mode: str, a: ClusterAssumptions, measured_train_s: float | None = None
) -> PresetPlan:
    """The simulator's inputs for `config` in `mode` (`measured_train_s`: CPU presets)."""
    slots, slots_why = episode_slots(config)
    limit = config.rollout.episode.time_limit_s
    cap = limit or DEFAULT_AGENT_TIMEOUT_S
    cap_why = (
        f"rollout.episode.time_limit_s={limit:g}"
        if limit
        else f"no rollout.episode.time_limit_s: the task default agent timeout, {cap:g} s"
    )
    rollouts, launch = config.rollouts_per_step, config.launch
    said = [f"C = {slots} ({slots_why}), the same in both modes", f"episodes capped at {cap:g} s ({cap_why})"]  # fmt: skip
    if launch.cpu:
        train_s = measured_train_s if measured_train_s is not None else a.cpu_train_s
        said.append(
            f"training {train_s:.1f} s a step "
            + ("(measured)" if measured_train_s is not None else "(assumed: README's ~5 s)")
        )
        return PresetPlan(config.preset, mode, 0, slots, rollouts, config.grpo.num_generations,
                          train_s, cap, a.cpu_median_s, tuple(said))  # fmt: skip
    gpus = launch.num_processes
    serve = f"{launch.vllm_server_nodes} vLLM server node(s)"
    if launch.generation_backend == "vllm-colocate":
        serve = "the same GPUs, between steps (vllm-colocate)"
        if mode == "async":
            gpus -= a.colocate_serve_gpus
            serve = (
                f"{a.colocate_serve_gpus} GPUs of the node running `vllm serve` (colocate cannot "
                "generate while training); gradient accumulation raised to keep "
                f"{rollouts} rollouts a step; episodes assumed as fast as colocated"
            )
    elif launch.generation_backend == "vllm-server" and not launch.vllm_server_nodes:
        serve = f"{launch.vllm_tensor_parallel_size} GPU(s) beside training on its node"
    tokens = rollouts * a.tokens_per_rollout
    flops, flops_why = training_flops(config, tokens)
    train_s = flops / (gpus * a.peak_flops * a.mfu)
    said += [
        f"{gpus} GPUs train; generation on {serve}",
        f"training {train_s:.0f} s a step = {flops_why} / ({gpus} GPUs x "
        f"{a.peak_flops / 1e12:.0f} TFLOP/s x MFU {a.mfu})",
    ]
    return PresetPlan(config.preset, mode, gpus, slots, rollouts, config.grpo.num_generations,
                      train_s, cap, a.median_s, tuple(said))  # fmt: skip


def general_assumptions(a: ClusterAssumptions, durations: str) -> list[str]:
    """The lines every preset shares (the per-preset ones are `PresetPlan.assumes`)."""
    return [
        f"episode durations: {durations}",
        f"cluster episode median {a.median_s:g} s (~20 turns of a Terminal-Bench task at ~15 s: "
        "~400 sampled tokens at ~35 tokens/s per sequence from vLLM under load, ~3 s of "
        "commands); cpu-demo keeps its own",
        f"{a.tokens_per_rollout:,} tokens per trajectory forwarded in training (half the 32k "
        "context); attention FLOPs not counted",
        "parameters from tbrl's memory planner (Qwen3-8B 8.2B, Qwen3-14B 14.8B, Qwen3-32B 32.8B)",
        f"MFU {a.mfu} of the {a.peak_flops / 1e12:.0f} TFLOP/s bf16 peak (the aim; measured 0.19 "
        "on one H200)",
        "an episode lasts as long whatever the number in flight and the mode (vLLM and the "
        "sandbox nodes keep pace; KV-cache limits not modelled); weight updates are free",
        "not played: dynamic sampling's refill groups, held-out evaluations, checkpoints, "
        "the curriculum",
    ]
