"""Preflight: check a preset against this machine and launch before anything is built.

`preflight(config)` returns the list of problems (empty: go); `require_preflight(config)`
raises `PreflightError` whose message names what is missing and the launch command for
the preset. Every check is local and bounded: no image is built, no weights are downloaded,
the hub check is one TCP connect with a short timeout (no retries).

Beyond the machine (world size, GPUs, vLLM/DeepSpeed, model, hub) it refuses settings that
would hang or desync a run: vLLM colocated with tensor parallel > 1 (tbrl's rollouts call the
engine per rank, without the gather across the parallel group TRL's own generate does) and
HF generation under ZeRO-3 (ranks generating different numbers of tokens wait for each other's
parameter gathers: a deadlock). It asks the run's sandbox backend (`SandboxBackend.preflight`,
a few seconds at most: does it answer, does it hold the sandboxes the run keeps in flight),
checks that a vLLM server answers its /health when the preset uses one, and that the
`report_to` trackers import.

GPU presence is read from `torch.cuda` (imported only when the preset needs GPUs);
`TBRL_FAKE_GPUS=N[:MEM_GB]` overrides what torch reports, for tests on machines without GPUs.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from urllib.parse import urlparse

from tbrl_lib.models import ModelNotFound, is_local, model_kind, resolve_model
from tbrl_lib.sandbox import BackendNotInstalled, Demand, EngineUnavailable, backend_for
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.model.model_loader import import_early
from tbrl_lib.train.plan.launch import launch_commands, run_starts_server
from tbrl_lib.train.plan.memory_plan import plan_memory
from tbrl_lib.train.vllm.server import answers

HUB_TIMEOUT_S = 3.0
SERVER_TIMEOUT_S = 2.0
TRACKER_MODULES = {"tensorboard": ("tensorboard", "tensorboardX"), "wandb": ("wandb",)}


class PreflightError(RuntimeError):
    """The preset cannot run here; the message says what is missing and how to launch."""


def _world_size() -> int:
    for var in ("WORLD_SIZE", "ACCELERATE_NUM_PROCESSES"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 1


def _gpus() -> tuple[int, float]:
    """(GPU count, smallest GPU memory in GB) on this node."""
    fake = os.environ.get("TBRL_FAKE_GPUS")
    if fake:
        count, _, mem = fake.partition(":")
        return int(count), float(mem or 80)
    try:
        import torch  # heavy (the train extra): only for a preset that needs GPUs
    except ImportError:
        return 0, 0.0
    if not torch.cuda.is_available():
        return 0, 0.0
    n = torch.cuda.device_count()
    mem = min(torch.cuda.get_device_properties(i).total_memory for i in range(n)) / 2**30
    return n, mem


def _hub_reachable() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true", "True"):
        return False
    host = (
        urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
        or "huggingface.co"
    )
    try:
        with socket.create_connection((host, 443), timeout=HUB_TIMEOUT_S):
            return True
    except OSError:
        return False


def _gpus_needed_per_node(config: TrainConfig, server_up: bool = False) -> int:
    """Training GPUs per node, plus the vLLM server's when it shares the (single) training node
    and is not running yet (once it runs, the launch script gives the trainer only its own)."""
    launch = config.launch
    shared_server = launch.generation_backend == "vllm-server" and launch.vllm_server_nodes == 0
    extra = launch.vllm_tensor_parallel_size if shared_server and not server_up else 0
    return launch.gpus_per_node + extra


def _server_url(config: TrainConfig) -> str | None:
    """The vLLM server's base URL with $VARS expanded; None when a variable is unset."""
    url = config.launch.vllm_server_url or ""
    expanded = os.path.expandvars(url)
    return None if not url or "$" in expanded else expanded.rstrip("/")


def sandbox_problems(config: TrainConfig) -> list[str]:
    """What the run's sandbox backend refuses before anything starts
    (`SandboxBackend.preflight`): it does not answer, or it holds fewer sandboxes than the run
    keeps in flight."""
    launch = config.launch
    demand = Demand(
        per_process=launch.sandbox_concurrency,
        processes=launch.num_processes,
        per_node=max(1, launch.gpus_per_node),
    )
    try:
        return backend_for(config.rollout.sandbox).preflight(demand)
    except (BackendNotInstalled, EngineUnavailable) as exc:
        return [str(exc)]


def setting_problems(config: TrainConfig) -> list[str]:
    """Combinations that would hang or desync a run, whatever the machine."""
    problems = []
    launch = config.launch
    if launch.generation_backend == "vllm-colocate" and launch.vllm_tensor_parallel_size > 1:
        problems.append(
            "vllm-colocate with launch.vllm_tensor_parallel_size="
            f"{launch.vllm_tensor_parallel_size}: rollouts call the engine per rank without the "
            "gather across the tensor-parallel group (ranks desync); use "
            "vllm_tensor_parallel_size=1 or generation_backend=vllm-server"
        )
    if launch.generation_backend == "hf" and launch.distributed == "zero3":
        problems.append(
            "launch.generation_backend=hf with distributed=zero3: ranks generating different "
            "lengths deadlock on ZeRO-3 parameter gathers; use vllm-colocate/vllm-server, or "
            "ddp/fsdp2"
        )
    for tracker in config.grpo.report_to:
        modules = TRACKER_MODULES.get(tracker, (tracker,))
        if not any(importlib.util.find_spec(m) for m in modules):
            problems.append(
                f"grpo.report_to={tracker}: {modules[0]} is not installed "
                f"(pip install {modules[0]})"
            )
    return problems


def preflight(config: TrainConfig) -> list[str]:
    """Problems that stop `config` from running here (empty list: go)."""
    problems: list[str] = setting_problems(config)
    launch = config.launch
    url = _server_url(config) if launch.generation_backend == "vllm-server" else None
    server_up = bool(url) and answers(url, SERVER_TIMEOUT_S)
    world = _world_size()
    if world != launch.num_processes:
        problems.append(
            f"world size {world} (this launch) != {launch.num_processes} training processes "
            f"in the preset ({launch.num_nodes} node(s) x {launch.gpus_per_node} GPU(s))"
        )
    if not launch.cpu:
        count, mem = _gpus()
        if count == 0:
            problems.append("no CUDA GPU visible on this machine")
        else:
            needed = _gpus_needed_per_node(config, server_up)
            if count < needed:
                problems.append(f"{count} GPU(s) visible, the preset needs {needed} on this node")
            if mem + 1 < launch.gpu_memory_gb:
                problems.append(
                    f"GPU memory {mem:.0f} GB < {launch.gpu_memory_gb:.0f} GB the preset is "
                    "planned for"
                )
    if launch.uses_vllm and importlib.util.find_spec("vllm") is None:
        problems.append(
            "vllm is not installed (on GPUs: pip install -e '.[gpu]'; on CPU: make setup-vllm)"
        )
    if launch.distributed.startswith("zero") and importlib.util.find_spec("deepspeed") is None:
        problems.append("deepspeed is not installed (pip install -e '.[gpu]')")
    server_var = (launch.vllm_server_url or "").partition("${")[2].partition("}")[0]
    if launch.generation_backend == "vllm-server" and server_var and not os.environ.get(server_var):
        problems.append(
            f"launch.vllm_server_url needs ${server_var}, which is not set (launch/commands.sh "
            "and job.sbatch set it to the server node)"
        )
    if url and not server_up and not run_starts_server(config):
        problems.append(
            f"no vLLM server answers at {url}/health: start it first (launch/commands.sh "
            "starts it, then training)"
        )
    if model_kind(config.model.name) in ("packaged", "folder"):
        try:
            resolve_model(config.model.name)
        except ModelNotFound as exc:
            problems.append(str(exc))
    elif not is_local(config.model.name) and not _hub_reachable():
        problems.append(
            f"model {config.model.name}: not in a local folder or the HF cache, and the hub is "
            "not reachable"
        )
    return problems + sandbox_problems(config)


def launch_hint(config: TrainConfig) -> str:
    if config.launch.num_processes <= 1 and config.launch.gpus_per_node <= 1:
        return f"tbrl train run --preset {config.preset}"
    return (
        f"tbrl train launch {config.preset} --out launch/   (then bash launch/commands.sh "
        "NODE_INDEX on each node, or sbatch launch/job.sbatch)"
    )


def require_preflight(config: TrainConfig) -> None:
    """Raise `PreflightError` naming every problem and the launch command for the preset.
    First imports unsloth when the run will load through it: this check comes before anything
    imports transformers, in `tbrl train run` and in notebook 04 alike."""
    import_early(config)
    problems = preflight(config)
    if problems:
        lines = [f"preset {config.preset} cannot run here:"] + [f"  - {p}" for p in problems]
        lines.append(f"launch it with: {launch_hint(config)}")
        raise PreflightError("\n".join(lines))


def dry_run_text(config: TrainConfig, overrides: list[str] | None = None) -> str:
    """Preflight result, memory plan and launch commands for `config`; nothing is run or built."""
    problems = preflight(config)
    lines = [
        f"preset {config.preset}: "
        + ("preflight ok" if not problems else "preflight would refuse:")
    ]
    lines += [f"  - {p}" for p in problems]
    lines += ["", plan_memory(config).table(), ""]
    commands = launch_commands(config, overrides=overrides or ())
    lines += [f"{role}: {cmd}" for role, cmd in commands.items()]
    if any("$" in cmd for cmd in commands.values()):
        lines.append(
            "($MAIN_IP, $MACHINE_RANK, $VLLM_HOST: set per node by launch/commands.sh and "
            f"launch/job.sbatch, written by: tbrl train launch {config.preset} --out launch/)"
        )
    return "\n".join(lines)
