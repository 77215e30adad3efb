"""Where a training run executes: in this process, or as a job on the nodes of the Slurm
allocation this process runs in; or nowhere, with one line saying how to submit it.

    here        one process on one node (every CPU preset but cpu-cluster, 1xh200): `train()`
                in this process, after the preflight
    allocation  several processes or nodes, or a vLLM server beside the trainer, inside a
                Slurm allocation that has the nodes and GPUs (`run_training` starts the roles
                on them); each training process runs the full preflight itself when it starts

`require_runnable(config)` decides before anything is built (notebook 04's first cell) and
raises `PreflightError` when the run cannot start: the preflight's problems for a run here;
for a job, one line saying how to submit it (outside an allocation) or what the allocation
lacks. Standard library and the preflight only: torch is not loaded.
"""

from __future__ import annotations

from typing import Literal

from tbrl_lib.slurm import SlurmError, allocation
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.grpo.preflight import PreflightError, require_preflight, setting_problems
from tbrl_lib.train.plan.launch import node_count, server_shares_node, uses_server
from tbrl_lib.train.plan.scripts import job_gpus_per_node

Where = Literal["here", "allocation"]


def is_job(config: TrainConfig) -> bool:
    """Whether the run needs more than this process: several processes or nodes, or a vLLM
    server the launch files start beside the trainer."""
    launch = config.launch
    server = server_shares_node(config) or (uses_server(config) and launch.vllm_server_nodes > 0)
    return launch.num_processes > 1 or node_count(config) > 1 or server


def placement(config: TrainConfig) -> Where:
    """`here` or `allocation` (see module docstring); no check."""
    return "allocation" if is_job(config) else "here"


def require_runnable(config: TrainConfig) -> Where:
    """Where the run executes, once it is known to be able to start there; `PreflightError`
    (one line for a job) otherwise."""
    if not is_job(config):
        require_preflight(config)
        return "here"
    problems = setting_problems(config)
    if problems:
        raise PreflightError(f"preset {config.preset} cannot run: {'; '.join(problems)}")
    nodes, gpus = node_count(config), job_gpus_per_node(config)
    needs = f"{nodes} node(s)" + (f" x {gpus} GPU(s)" if gpus else "")
    submit = (
        f"tbrl train launch {config.preset} --out launch/ && sbatch launch/job.sbatch, or this "
        f"notebook inside `salloc -N{nodes}" + (f" --gpus-per-node={gpus}" if gpus else "") + "`"
    )
    try:
        job = allocation()
    except SlurmError as err:
        raise PreflightError(f"preset {config.preset} needs a Slurm job ({err})") from None
    if job is None:
        raise PreflightError(
            f"preset {config.preset} runs {config.launch.num_processes} training process(es) on "
            f"{needs}: submit it as a Slurm job ({submit})"
        )
    if len(job.nodes) < nodes or job.gpus_per_node < gpus:
        raise PreflightError(
            f"preset {config.preset} needs {needs}; Slurm {job.describe()}: submit it with "
            f"what it needs ({submit})"
        )
    return "allocation"
