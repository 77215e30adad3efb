"""Preflight: check a preset against this machine and launch before anything is built.

`preflight(config)` returns the list of problems (empty: go); `require_preflight(config)`
raises `PreflightError` whose message names what is missing and the launch command for
the preset. Every check is local and bounded: no image is built, no weights are downloaded,
the hub check is one TCP connect with a short timeout (no retries).

GPU presence is read from `torch.cuda` (imported only when the preset needs GPUs);
`TBRL_FAKE_GPUS=N[:MEM_GB]` overrides what torch reports, for tests on machines without GPUs.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from tbrl_lib.train.presets import TrainConfig

HUB_TIMEOUT_S = 3.0


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
        import torch
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


def _model_local(model: str) -> bool:
    if model.startswith("tiny") or Path(model).is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # noqa: BLE001 - no cache / bad id: treated as not local
        return False


def _gpus_needed_per_node(config: TrainConfig) -> int:
    """Training GPUs per node, plus the vLLM server's when it shares the (single) training node."""
    shared_server = config.generation_backend == "vllm-server" and config.vllm_server_nodes == 0
    return config.gpus_per_node + (config.vllm_tensor_parallel_size if shared_server else 0)


def preflight(config: TrainConfig) -> list[str]:
    """Problems that stop `config` from running here (empty list: go)."""
    problems: list[str] = []
    needs_gpu = config.gpus_per_node > 0
    world = _world_size()
    if world != config.num_processes:
        problems.append(
            f"world size {world} (this launch) != {config.num_processes} training processes "
            f"in the preset ({config.num_nodes} node(s) x {config.gpus_per_node} GPU(s))"
        )
    if needs_gpu:
        count, mem = _gpus()
        if count == 0:
            problems.append("no CUDA GPU visible on this machine")
        else:
            needed = _gpus_needed_per_node(config)
            if count < needed:
                problems.append(f"{count} GPU(s) visible, the preset needs {needed} on this node")
            if mem + 1 < config.gpu_memory_gb:
                problems.append(
                    f"GPU memory {mem:.0f} GB < {config.gpu_memory_gb:.0f} GB the preset is planned for"
                )
    if config.generation_backend.startswith("vllm") and importlib.util.find_spec("vllm") is None:
        problems.append("vllm is not installed (pip install -e '.[gpu]')")
    if config.distributed.startswith("zero") and importlib.util.find_spec("deepspeed") is None:
        problems.append("deepspeed is not installed (pip install -e '.[gpu]')")
    if (
        config.generation_backend == "vllm-server"
        and config.vllm_server_url
        and "${" in config.vllm_server_url
    ):
        var = config.vllm_server_url.split("${", 1)[1].split("}", 1)[0]
        if not os.environ.get(var):
            problems.append(f"vllm_server_url needs ${var}, which is not set")
    if not _model_local(config.model) and not _hub_reachable():
        problems.append(
            f"model {config.model}: not in a local folder or the HF cache, and the hub is not reachable"
        )
    return problems


def launch_hint(config: TrainConfig) -> str:
    if config.num_processes <= 1 and config.gpus_per_node <= 1:
        return f"tbrl train run --preset {config.name}"
    return f"tbrl train launch {config.name} --out launch/   (then run launch/commands.sh on each node)"


def require_preflight(config: TrainConfig) -> None:
    """Raise `PreflightError` naming every problem and the launch command for the preset."""
    problems = preflight(config)
    if problems:
        lines = [f"preset {config.name} cannot run here:"] + [f"  - {p}" for p in problems]
        lines.append(f"launch it with: {launch_hint(config)}")
        raise PreflightError("\n".join(lines))


def dry_run_text(config: TrainConfig) -> str:
    """Preflight result, memory plan and launch commands for `config`; nothing is run or built."""
    from tbrl_lib.train.launch import launch_commands
    from tbrl_lib.train.memory import plan_memory

    problems = preflight(config)
    lines = [
        f"preset {config.name}: " + ("preflight ok" if not problems else "preflight would refuse:")
    ]
    lines += [f"  - {p}" for p in problems]
    lines += ["", plan_memory(config).table(), ""]
    lines += [f"{role}: {cmd}" for role, cmd in launch_commands(config).items()]
    return "\n".join(lines)
