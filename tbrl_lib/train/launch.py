"""Launch configs: the accelerate config YAML and the shell commands that start a preset.

`accelerate_config(config)` returns the dict `accelerate launch --config_file` reads
(DeepSpeed ZeRO-3, FSDP2, multi-GPU DDP or single process), with `num_machines`,
`num_processes` and the rendezvous filled in from the preset; `launch_commands(config)`
returns the commands to run, one per role (the vLLM server node, then every training node).
What is left out: job schedulers (SLURM/Kubernetes manifests); the commands are what such a
script would run on each node, with `$MACHINE_RANK` and `$MAIN_IP` set by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tbrl_lib.train.presets import TrainConfig

MAIN_PORT = 29500
VLLM_PORT = 8000


def accelerate_config(config: TrainConfig, main_process_ip: str | None = None) -> dict[str, Any]:
    """The accelerate config dict for `config` (write it with `write_accelerate_config`)."""
    out: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": "no" if config.dtype == "fp32" else config.dtype,
        "num_machines": config.num_nodes,
        "num_processes": config.num_processes,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": config.gpus_per_node == 0,
    }
    if config.num_nodes > 1:
        # The address is usually only known at launch: `launch_commands` passes $MAIN_IP.
        if main_process_ip:
            out["main_process_ip"] = main_process_ip
        out["main_process_port"] = MAIN_PORT
    if config.distributed == "zero3":
        out["distributed_type"] = "DEEPSPEED"
        out["deepspeed_config"] = {
            "deepspeed_multinode_launcher": "standard",
            "offload_optimizer_device": "none",
            "offload_param_device": "none",
            "zero3_init_flag": True,
            "zero3_save_16bit_model": True,
            "zero_stage": 3,
        }
    elif config.distributed == "fsdp2":
        out["distributed_type"] = "FSDP"
        out["fsdp_config"] = {
            "fsdp_version": 2,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_offload_params": False,
            "fsdp_reshard_after_forward": True,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_activation_checkpointing": config.gradient_checkpointing,
        }
    elif config.distributed == "ddp":
        out["distributed_type"] = "MULTI_GPU"
    else:
        out["distributed_type"] = "NO"
    return out


def write_accelerate_config(config: TrainConfig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(accelerate_config(config), sort_keys=True))
    return path


def launch_commands(
    config: TrainConfig, config_path: str = "accelerate.yaml", out_dir: str = "outputs/train"
) -> dict[str, str]:
    """Shell commands per role: `vllm_server` (when the preset uses one) and `train`."""
    commands: dict[str, str] = {}
    if config.generation_backend == "vllm-server":
        commands["vllm_server"] = (
            f"trl vllm-serve --model {config.model} --tensor-parallel-size {config.vllm_tensor_parallel_size} "
            f"--max-model-len {config.max_context_tokens} --port {VLLM_PORT}"
        )
    train = f"tbrl train run --preset {config.name} --out {out_dir}"
    if config.num_processes == 1 and config.distributed == "none":
        commands["train"] = train
        return commands
    rank = (
        " --machine_rank $MACHINE_RANK --main_process_ip $MAIN_IP" if config.num_nodes > 1 else ""
    )
    commands["train"] = (
        f"accelerate launch --config_file {config_path}{rank} -m tbrl_lib.train.run "
        f"--preset {config.name} --out {out_dir}"
    )
    return commands
