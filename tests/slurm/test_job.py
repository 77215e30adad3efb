"""The card's batch job, for real: notebook 04 with the `cpu-cluster` preset (2 nodes x 1
training process, gloo, sandboxes through Ray) under the test's Slurm (`conftest.py`),

- as `tbrl train launch` writes it, submitted with `sbatch job.sbatch`: papermill runs the
  notebook on the first node, which starts a Ray head and worker and `accelerate launch` on
  both nodes; the run trains 2 steps in 2 processes (world size 2 in `summary.json`), its
  sandboxes run on both Ray nodes, the executed notebook and its HTML report are in the run
  folder;
- as `papermill 04_train.ipynb ... -p preset cpu-cluster` from `notebooks/` inside `salloc -N2`:
  the same run and notebook.

After each, nothing of it runs: no container of the run, no process of the job's Ray nodes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.training import run_label
from tests.slurm.test_submit import ROOT, launch

pytestmark = [pytest.mark.slurm, pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
JOB_S = 900
"""A run takes 3-6 minutes on 2 loaded cores; the bound only stops a hung one."""


def check_the_run(run: Path, job_id: str) -> str:
    """What a finished cpu-cluster job leaves, and that nothing of it runs any more; its
    roles' seconds, as a line."""
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["preset"], summary["steps"], summary["world_size"]) == ("cpu-cluster", 2, 2)
    job = json.loads((run / "job" / "job.json").read_text())
    assert job["job_id"] == job_id and job["exit_code"] == 0
    assert job["training_nodes"] == job["ray_nodes"] == ["n0", "n1"]
    places = job["rollouts_per_place"]
    assert len(places) == 2 and "local" not in places, places  # a Ray node id each, both used
    notebook = (run / "04_train.ipynb").read_text()
    assert "grpo step 2/2" in notebook and "rollouts per Ray node" in notebook
    label = run_label(load_preset("cpu-cluster"), run)
    client = docker.from_env()
    try:
        left = client.api.containers(all=True, filters={"label": f"tbrl.run={label}"})
    finally:
        client.close()
    assert left == [], [c["Names"] for c in left]
    ray = subprocess.run(["pgrep", "-f", job["ray_temp"]], capture_output=True, text=True)
    assert ray.stdout.strip() == "", f"Ray processes of job {job_id} still run: {ray.stdout}"
    assert not list(Path(job["ray_temp"]).parent.glob(Path(job["ray_temp"]).name + "-*"))
    return f"roles {job['seconds']}, train() {summary['wall_seconds']}s"


def test_sbatch_of_the_generated_job_leaves_the_report_of_a_two_node_run(slurm, tmp_path):
    script = launch("cpu-cluster", tmp_path)
    began = time.monotonic()
    submitted = slurm.run("sbatch", "--parsable", str(script))
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    state = slurm.wait_for(job_id, JOB_S)
    took = time.monotonic() - began
    log = (tmp_path / f"slurm-tbrl-cpu-cluster-{job_id}.out").read_text()
    assert state == "COMPLETED", log[-5000:]
    run = tmp_path / f"run-{job_id}"
    seconds = check_the_run(run, job_id)
    html = (run / "04_train.html").read_text()
    assert "grpo step 2/2" in html and "rollouts per Ray node" in html
    print(f"sbatch -> report: {took:.0f}s (job {job_id}; {seconds})")


def test_papermill_inside_salloc_runs_the_same_job(slurm, tmp_path):
    """The card's line as a researcher types it: from `notebooks/`, where JupyterLab starts."""
    run = tmp_path / "run"
    papermill = [
        sys.executable, "-m", "papermill", "04_train.ipynb", str(run / "04_train.ipynb"),
        "-p", "preset", "cpu-cluster", "-p", "out_dir", str(run),
    ]  # fmt: skip
    run.mkdir()
    began = time.monotonic()
    done = slurm.run(
        "salloc", "-N2", "--exclusive", *papermill, timeout=JOB_S, cwd=ROOT / "notebooks"
    )
    took = time.monotonic() - began
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    granted = next(w for w in done.stderr.split("\n") if "Granted job allocation" in w)
    seconds = check_the_run(run, granted.split()[-1])
    print(f"salloc papermill: {took:.0f}s ({seconds})")
