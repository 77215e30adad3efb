"""Training through the `ray` backend against a real cluster (see `conftest.py`).

Two 2-step cpu-smoke runs at once, each keeping `launch.sandbox_concurrency` 4 in flight,
share the cluster's 4 `sandbox` units: the two engines never hold more than 4 running task
containers together (counted every 0.2 s), both runs finish with a reward logged for every
step, and none of their containers is left. One of them is the issue's "2-step training run
through the ray backend".
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.conftest import ROOT, UNITS
from tests.cluster.test_ray_eval import Sampler

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
TRAIN_S = 900
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
