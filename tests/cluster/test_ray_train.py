"""Training through the `ray` backend against a real cluster (see `conftest.py`).

Two 2-step cpu-smoke runs at once, each keeping `launch.sandbox_concurrency` 4 in flight,
share the cluster's 4 `sandbox` units: the two engines never hold more than 4 running task
containers together (counted every 0.2 s), both runs finish with a reward logged for every
step, and none of their containers is left. One of them is the issue's "2-step training run
through the ray backend". Then cpu-cluster's two training processes lose a node mid-step.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.training import run_label
from tests.cluster.conftest import ROOT, UNITS, _free_port, run_containers
from tests.cluster.test_ray_eval import Sampler

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
TRAIN_S = 900
SLOW_S = 20  # how long each rollout's tests sleep in the killed-node test
SETTINGS = [
    "rollout.sandbox.backend=ray",
    "grpo.max_steps=2",
    "grpo.num_generations=2",
    "grpo.gradient_accumulation_steps=4",  # 2 tasks x 2 rollouts per step
    "rollout.episode.max_turns=2",
    "rollout.episode.max_tokens_per_turn=16",
]


def start_training(cluster, out: Path) -> subprocess.Popen:
    sets = [a for s in SETTINGS for a in ("--set", s)]
    args = [sys.executable, "-m", "tbrl_lib.cli", "train", "run", "--preset", "cpu-smoke"]
    log = (out.parent / f"{out.name}.log").open("wb")
    env = cluster.env(OMP_NUM_THREADS="1", TQDM_DISABLE="1")
    return subprocess.Popen(
        [*args, *sets, "--out", str(out)], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )


class NodeSampler(Sampler):
    """`Sampler` over every container the ray backend made (label `tbrl.node`)."""

    def __init__(self, engines: dict) -> None:
        super().__init__(engines, "")

    def run(self) -> None:
        while not self.stop.is_set():
            total = 0
            for name, client in self.engines.items():
                running = client.api.containers(filters={"label": ["tbrl.node", "tbrl.run"]})
                running = [c for c in running if c["Labels"]["tbrl.run"].startswith("train-")]
                self.seen[name] = max(self.seen[name], len(running))
                total += len(running)
            self.peak = max(self.peak, total)
            time.sleep(0.2)


def test_two_trainings_share_the_cluster_capacity_and_log_rewards(cluster, engines, tmp_path):
    sampler = NodeSampler(engines)
    sampler.start()
    runs = [tmp_path / "one", tmp_path / "two"]
    processes = [start_training(cluster, out) for out in runs]
    try:
        codes = [p.wait(timeout=TRAIN_S) for p in processes]
    finally:
        for p in processes:
            p.kill()
        sampler.stop.set()
        sampler.join()
    for out, code in zip(runs, codes, strict=True):
        assert code == 0, (out.parent / f"{out.name}.log").read_text()[-4000:]
        steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
        rewards = [s["train/reward"] for s in steps if "train/reward" in s]
        assert len(rewards) == 2 and all(0.0 <= r <= 1.0 for r in rewards), steps
    assert sampler.peak <= 2 * UNITS, sampler.peak  # 2 x 4 wanted, 4 units: Ray made them wait
    assert sampler.peak >= 2, sampler.peak
    for client in engines.values():
        left = client.api.containers(all=True, filters={"label": ["tbrl.node", "tbrl.run"]})
        assert not [c for c in left if c["Labels"]["tbrl.run"].startswith("train-")]


def slow_tests(folder: Path, task_ids: list[str], seconds: int) -> Path:
    """Copies of bundled tasks whose tests first sleep `seconds` (the images are unchanged:
    an image's hash covers its environment), so every rollout holds its sandbox that long."""
    for task_id in task_ids:
        shutil.copytree(ROOT / "data" / "tasks" / task_id, folder / task_id)
        tests = folder / task_id / "tests" / "test_outputs.py"
        tests.write_text(f"import time\ntime.sleep({seconds})\n" + tests.read_text())
    return folder


def test_a_node_killed_mid_step_masks_its_rollouts_and_leaves_no_container(
    cluster, engines, tmp_path
):
    """cpu-cluster's 2 training processes (accelerate, gloo) on the cluster's 4 units; worker
    b is killed while it runs a rollout of step 1, and comes back: the run finishes its 3
    steps, b's rollouts masked as infra errors (`node_lost`), and the run's closing reap
    leaves none of its containers on either engine."""
    out = tmp_path / "killed"
    tasks = slow_tests(tmp_path / "tasks", ["count-error-lines", "find-large-files"], SLOW_S)
    label = run_label(load_preset("cpu-cluster"), out)
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    launch += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    launch += ["--dynamo_backend", "no", "--main_process_port", str(_free_port())]
    train = ["-m", "tbrl_lib.cli", "train", "run", "--preset", "cpu-cluster", "--tasks", str(tasks)]
    train += ["--set", "grpo.max_steps=3", "--set", "grpo.max_infra_error_rate=0.9"]
    train += ["--set", "curriculum.filter_after_groups=10"]  # the tiny model never solves them
    env = cluster.env(OMP_NUM_THREADS="1", TQDM_DISABLE="1", CUDA_VISIBLE_DEVICES="")
    log = (tmp_path / "killed.log").open("wb")
    process = subprocess.Popen(
        [*launch, *train, "--out", str(out)], env=env, cwd=ROOT, stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + TRAIN_S
        while not any(c["State"] == "running" for c in run_containers(engines["b"], label)):
            assert process.poll() is None, (tmp_path / "killed.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "b never ran a sandbox"
            time.sleep(0.2)
        cluster.workers["b"].kill()  # mid-step: b holds a rollout in its tests' sleep
        cluster.start_worker("b", cluster.workers["b"].docker_host)  # and comes back
        code = process.wait(timeout=TRAIN_S)
    finally:
        process.kill()
    assert code == 0, (tmp_path / "killed.log").read_text()[-4000:]
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert steps[0]["rollout/infra_error_rate"] > 0, steps[0]
    lost = [
        record["error"]
        for path in (out / "trajectories").glob("step-00000-*.jsonl")
        for record in map(json.loads, path.read_text().splitlines())
        if record["infra_error"]
    ]
    # the sandbox's own calls (kind node_lost), or the verifier's, which it names
    assert lost and all("cluster node" in e and "lost during" in e for e in lost), lost
    assert run_containers(engines["a"], label) == [] and run_containers(engines["b"], label) == []
