"""Two processes on CPU: `accelerate launch` (torchrun, gloo) of the real training path with
real sandboxes. Every rank's rollouts are counted once in one metrics line per step, each
rank writes its own trajectory files, and the ranks keep the same curriculum state (checked
at every checkpoint by `hooks.require_same_on_every_process`, which this file also
shows failing when two processes disagree)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter

import pytest
import torch.multiprocessing as mp

from tbrl_lib.train.plan.resume import read_state

SETTINGS = [
    "grpo.max_steps=2",
    "grpo.save_steps=1",
    "grpo.num_generations=2",
    "grpo.gradient_accumulation_steps=4",  # each rank: 2 tasks x 2 rollouts per step
    "rollout.episode.max_turns=1",
    "rollout.episode.max_tokens_per_turn=16",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch_two(out, extra: list[str]) -> subprocess.CompletedProcess:
    """`tbrl train run` on cpu-smoke with SETTINGS + `extra`, in 2 CPU processes."""
    # --multi_gpu picks accelerate's torchrun launcher; with no GPU visible each process
    # joins a gloo group on CPU (`--cpu` alone starts one process unless mpirun exists).
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    launch += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    launch += ["--dynamo_backend", "no", "--main_process_port", str(_free_port())]
    train = [
        "-m",
        "tbrl_lib.cli",
        "train",
        "run",
        "--no-preflight",
    ]  # 2 CPU ranks: not in the preset
    train += ["--preset", "cpu-smoke", "--out", str(out)]
    train += [a for s in SETTINGS + extra for a in ("--set", s)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(launch + train, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done


@pytest.mark.docker
@pytest.mark.slow
def test_two_processes_count_every_rollout_once(tmp_path, base_image):
    out = tmp_path / "run"
    _launch_two(out, [])

    # One line per step, written once, counting both ranks' 4 rollouts.
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    assert [r["rollout/count"] for r in lines] == [8.0, 8.0]
    # Each rank its own file per step; both ranks sampled the same tasks.
    names = sorted(p.name for p in (out / "trajectories").glob("*.jsonl"))
    assert names == [f"step-{s:05d}-call-{s + 1:04d}-rank{r}.jsonl" for s in (0, 1) for r in (0, 1)]
    for step in (0, 1):
        tasks = [
            Counter(
                json.loads(line)["task_id"]
                for line in (
                    out / "trajectories" / f"step-{step:05d}-call-{step + 1:04d}-rank{r}.jsonl"
                )
                .read_text()
                .splitlines()
            )
            for r in (0, 1)
        ]
        assert tasks[0] == tasks[1] and sum(tasks[0].values()) == 4
    # The checkpoints were written after every rank's state matched; they cover 16 rollouts.
    state = read_state(out / "checkpoints" / "checkpoint-2")
    assert state["curriculum"]["step"] == 2 and state["runner"]["total"] == 16
    scored = 16 - len(state["runner"]["infra_errors"])
    assert sum(r["rollouts"] for r in state["curriculum"]["records"].values()) == scored
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["rollouts"] == 16


@pytest.mark.docker
@pytest.mark.slow
def test_two_async_processes_each_stream_their_share_and_count_it_once(tmp_path, base_image):
    """`grpo.async_rollouts` in 2 processes: each rank's worker generates its share, each
    rank records what it took, and every step's metrics line counts both ranks' rollouts
    once; the staleness metrics are there (0 at the first step, at most 1 later: how far
    behind a group started depends on how the ranks' episodes and steps interleave)."""
    out = tmp_path / "run"
    _launch_two(out, ["grpo.async_rollouts=true", "grpo.save_steps=0"])
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    assert [r["rollout/count"] for r in lines] == [8.0, 8.0]
    staleness = [r["train/async/staleness_max"] for r in lines]
    assert staleness[0] == 0.0 and staleness[1] in (0.0, 1.0)
    names = sorted(p.name for p in (out / "trajectories").glob("*.jsonl"))
    assert names == [f"step-{s:05d}-call-{s + 1:04d}-rank{r}.jsonl" for s in (0, 1) for r in (0, 1)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["rollouts"] == 16


def _check_states(rank: int, port: int, differ: bool, results) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE="2",
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        CUDA_VISIBLE_DEVICES="",
    )
    from accelerate import PartialState

    from tbrl_lib.train.step.hooks import require_same_on_every_process

    PartialState(cpu=True)
    parts = {"curriculum": {"step": 3 + (rank if differ else 0)}, "runner": {"calls": 3}}
    try:
        require_same_on_every_process(parts, step=3)
        results.put((rank, "same"))
    except RuntimeError as exc:
        results.put((rank, str(exc)))


@pytest.mark.slow
@pytest.mark.parametrize("differ", [False, True])
def test_the_desync_check_stops_processes_that_disagree(differ):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_check_states, args=(r, port, differ, results)) for r in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    got = dict(results.get(timeout=5) for _ in procs)
    if differ:  # every process stops, naming the part that differs
        assert all("process 1's curriculum state differs" in got[r] for r in (0, 1))
    else:
        assert got == {0: "same", 1: "same"}
