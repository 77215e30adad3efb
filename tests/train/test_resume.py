"""Resume: a real cpu-smoke-sized run, killed with SIGKILL once a checkpoint is complete,
continues from that checkpoint at the next step with the curriculum, sampler and runner
state it saved; metrics.jsonl keeps one line per step; `--resume` without a usable
checkpoint, or with other settings, is refused in one line (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.plan.resume import (
    ResumeError,
    checkpoint_step,
    complete_checkpoints,
    find_checkpoint,
    read_state,
    write_state,
)
from tbrl_lib.train.step.curriculum import Curriculum

SETTINGS = [
    "grpo.max_steps=3",
    "grpo.save_steps=1",
    "grpo.num_generations=2",
    "grpo.gradient_accumulation_steps=4",  # 2 tasks x 2 rollouts per step
    "rollout.episode.max_turns=1",
    "rollout.episode.max_tokens_per_turn=16",
    "curriculum.filter_after_groups=3",  # a task skipped at step 3 at the earliest: the run reaches it
]


def _command(module: list[str], out: Path, *extra: str) -> list[str]:
    sets = [a for s in SETTINGS for a in ("--set", s)]
    return [
        sys.executable,
        "-m",
        *module,
        "--preset",
        "cpu-smoke",
        *sets,
        "--out",
        str(out),
        *extra,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}


def _wait_for_checkpoint(proc: subprocess.Popen, out: Path, log: Path, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not complete_checkpoints(out):
        if proc.poll() is not None:
            pytest.fail(
                f"the run ended (rc {proc.returncode}) before a checkpoint:\n{log.read_text()[-3000:]}"
            )
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no checkpoint within {limit_s:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


def _remove_containers(docker_client, pid: int) -> None:
    """The killed run could not stop its sandboxes: remove them by its run label."""
    label = f"tbrl.run=train-cpu-smoke-{pid}"
    for container in docker_client.api.containers(all=True, filters={"label": label}):
        try:
            docker_client.api.remove_container(container["Id"], force=True)
        except docker.errors.NotFound:  # it was removing itself
            pass


def _refusal(out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = _command(["tbrl_lib.cli", "train", "run"], out, "--resume", "latest", *extra)
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=120)


@pytest.mark.docker
@pytest.mark.slow
def test_a_killed_run_resumes_at_the_next_step_with_its_curriculum(
    tmp_path, docker_client, base_image
):
    out = tmp_path / "run"
    log = tmp_path / "first.log"
    with log.open("w") as fh:
        first = subprocess.Popen(
            _command(["tbrl_lib.cli", "train", "run"], out),
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=_env(),
        )
        try:
            _wait_for_checkpoint(first, out, log, limit_s=400)
            first.send_signal(signal.SIGKILL)  # no finally, no flush: as a preempted node dies
            first.wait()
        finally:
            _remove_containers(docker_client, first.pid)
    killed_at = time.time()
    k = checkpoint_step(complete_checkpoints(out)[-1])
    assert k < 3, "the run finished before it could be killed"
    saved = read_state(out / "checkpoints" / f"checkpoint-{k}")
    kept_lines = [
        line
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if json.loads(line)["step"] <= k
    ]

    # Other settings, or a run folder without checkpoints: refused in one line, nothing built.
    refused = _refusal(out, "--set", "grpo.learning_rate=0.5")
    assert refused.returncode == 2 and "learning_rate" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    empty = _refusal(tmp_path / "empty")
    assert empty.returncode == 2 and "no checkpoint" in empty.stderr

    resumed = subprocess.run(
        _command(["tbrl_lib.cli", "train", "run"], out, "--resume", "latest"),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=500,
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]

    # One metrics line per step; the lines up to the checkpoint are the first run's.
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3]
    assert lines[:k] == kept_lines
    # One trajectory file per step, named as an uninterrupted run names them; the steps up to
    # k are the first run's files, untouched, and step k+1 onwards are the resumed run's.
    trajectories = sorted((out / "trajectories").glob("*.jsonl"))
    assert [p.name for p in trajectories] == [
        f"step-{s:05d}-call-{s + 1:04d}.jsonl" for s in range(3)
    ]
    assert all(p.stat().st_mtime < killed_at for p in trajectories[:k])
    assert all(p.stat().st_mtime > killed_at for p in trajectories[k:])
    # The resumed step k+1 started from checkpoint k's curriculum: its counts are k's plus
    # exactly the rollouts of step k+1 (a fresh curriculum would hold step k+1's alone).
    after = read_state(out / "checkpoints" / f"checkpoint-{k + 1}")
    assert after["curriculum"]["step"] == saved["curriculum"]["step"] + 1 == k + 1
    assert after["runner"]["calls"] == k + 1
    assert after["sampler"]["drawn"][:k] == saved["sampler"]["drawn"]
    rows = [json.loads(line) for line in trajectories[k].read_text().splitlines()]
    for task_id, record in after["curriculum"]["records"].items():
        scored = sum(1 for r in rows if r["task_id"] == task_id and not r["infra_error"])
        before = saved["curriculum"]["records"][task_id]
        assert record["rollouts"] == before["rollouts"] + scored
        assert record["groups"] == before["groups"] + (1 if scored else 0)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 3


def _state(tmp_path: Path, config, step: int = 2) -> Path:
    folder = tmp_path / "run" / "checkpoints" / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    curriculum = Curriculum({t: "easy" for t in config.data.task_ids})
    write_state(
        folder,
        {"step": step, "config": config.to_dict(), "curriculum": curriculum.state_dict()},
    )
    return folder


def test_latest_is_the_newest_complete_checkpoint(tmp_path):
    config = load_preset("cpu-smoke")
    _state(tmp_path, config, 2)
    newest = _state(tmp_path, config, 10)
    (tmp_path / "run" / "checkpoints" / "checkpoint-11").mkdir()  # died while saving
    assert find_checkpoint("latest", tmp_path / "run", config) == newest
    # a longer run may continue; other learning settings may not
    assert find_checkpoint(newest, "", load_preset("cpu-smoke", {"grpo.max_steps": 9})) == newest
    with pytest.raises(ResumeError, match="grpo.num_generations: 4 there, 2 here"):
        find_checkpoint(
            "latest", tmp_path / "run", load_preset("cpu-smoke", {"grpo.num_generations": 2})
        )
    with pytest.raises(ResumeError, match="not a complete tbrl checkpoint"):
        find_checkpoint(tmp_path / "run" / "checkpoints" / "checkpoint-11", "", config)
    with pytest.raises(ResumeError, match="needs --out"):
        find_checkpoint("latest", "", config)
