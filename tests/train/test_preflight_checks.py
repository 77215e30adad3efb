"""Preflight refusals beyond the machine: settings that hang or desync a run, trackers that
are not installed, a Docker engine that does not answer, sandboxes beyond its memory or beyond
a Ray cluster's `sandbox` units, and a vLLM server that does not answer (the GPU count of a
shared node depends on it); the async presets refuse only for what this machine lacks."""

from __future__ import annotations

import http.server
import threading
import time

import pytest
from typer.testing import CliRunner

from tbrl_lib.cli.train import app
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.preflight import preflight, sandbox_problems, setting_problems


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def test_colocate_with_tensor_parallel_and_hf_with_zero3_are_refused():
    colocate = load_preset("8xh100", {"launch.vllm_tensor_parallel_size": 2})
    (line,) = setting_problems(colocate)
    assert "vllm-colocate with launch.vllm_tensor_parallel_size=2" in line and "desync" in line
    hf = load_preset("8xh100", {"launch.generation_backend": "hf"})
    (line,) = setting_problems(hf)
    assert "launch.generation_backend=hf with distributed=zero3" in line and "deadlock" in line
    assert setting_problems(load_preset("8xh100")) == []
    assert setting_problems(load_preset("8xh100", {"launch": {"distributed": "fsdp2", "generation_backend": "hf"}})) == []  # fmt: skip


def test_refusal_through_the_cli_is_one_line_each_and_fast():
    t0 = time.monotonic()
    result = CliRunner().invoke(
        app,
        [
            "preflight",
            "8xh100",
            "--set",
            "launch.generation_backend=hf",
            "--set",
            "grpo.report_to=wandb",
        ],
    )
    assert time.monotonic() - t0 < 15
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert sum("distributed=zero3" in line for line in lines) == 1
    assert any("grpo.report_to=wandb: wandb is not installed" in line for line in lines)


def test_trackers_that_import_pass():
    assert setting_problems(load_preset("cpu-smoke", {"grpo.report_to": "tensorboard"})) == []


def test_an_engine_that_does_not_answer_is_named_within_seconds(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    t0 = time.monotonic()
    (problem,) = sandbox_problems(load_preset("cpu-smoke"))
    assert time.monotonic() - t0 < 8
    assert "needs a Docker engine" in problem and "DOCKER_HOST" in problem


@pytest.mark.docker
def test_sandboxes_beyond_the_engines_memory_are_refused(docker_client):
    assert sandbox_problems(load_preset("cpu-smoke")) == []
    (line,) = sandbox_problems(load_preset("cpu-smoke", {"launch.sandbox_concurrency": 100_000}))
    assert "100000 sandboxes in flight" in line and "lower launch.sandbox_concurrency" in line


def test_several_docker_hosts_are_refused_in_one_line_naming_the_ray_backend():
    """One way to place sandboxes across machines: the ray backend."""
    for settings in (
        {"rollout.sandbox.docker.hosts": ["ssh://tbrl@docker-1"]},
        {"rollout": {"sandbox": {"docker": {"hosts": [{"base_url": "tcp://a:2375"}]}}}},
    ):
        with pytest.raises(ValueError) as refused:
            load_preset("cpu-smoke", settings)
        assert "sandbox.docker.hosts (several Docker engines) is gone" in str(refused.value)
        assert "sandbox.backend=ray" in str(refused.value)
    result = CliRunner().invoke(app, ["preflight", "cpu-smoke", "--set", "docker_hosts=[a]"])
    assert (
        result.exit_code != 0 and "'docker_hosts' is now 'rollout.sandbox.backend'" in result.output
    )
    local = load_preset("cpu-smoke", {"rollout.sandbox.docker.max_concurrency": 3})
    assert local.rollout.sandbox.docker.hosts[0].max_concurrency == 3  # this machine's cap


def test_several_processes_on_a_ray_cluster_named_nowhere_are_refused(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (line,) = sandbox_problems(load_preset("cpu-cluster"))
    assert "2 processes place sandboxes on a Ray cluster, and RAY_ADDRESS is not set" in line
    assert "sbatch job.sbatch" in line


@pytest.mark.ray
@pytest.mark.slow
def test_more_rollouts_at_once_than_the_clusters_sandbox_units_are_refused(monkeypatch):
    """A Ray instance of this process's, 8 units: 9 in flight are refused, 8 pass."""
    ray = pytest.importorskip("ray")
    from tbrl_lib.sandbox import SandboxConfig, backend_for

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert backend_for(SandboxConfig(backend="ray")).capacity().total == 8  # ray.init() here
    monkeypatch.setenv("RAY_ADDRESS", ray.get_runtime_context().gcs_address)
    try:
        on_ray = {"rollout.sandbox.backend": "ray"}
        fits = load_preset("cpu-smoke", {**on_ray, "launch.sandbox_concurrency": 8})
        assert sandbox_problems(fits) == []
        over = load_preset("cpu-smoke", {**on_ray, "launch.sandbox_concurrency": 9})
        (line,) = sandbox_problems(over)
        assert "9 sandboxes in flight (9 x 1 process(es)) but the ray backend offers 8" in line
    finally:
        ray.shutdown()


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_shared_node_needs_the_server_gpu_only_until_the_server_answers(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("TBRL_FAKE_GPUS", "1:80")  # what the trainer sees after the split
    try:
        up = preflight(load_preset("2xa100", {"launch.vllm_server_url": url}))
        assert not any("GPU" in p or "vLLM server" in p for p in up), up
    finally:
        server.shutdown()
        server.server_close()
    down = "\n".join(preflight(load_preset("2xa100", {"launch.vllm_server_url": url})))
    assert f"no vLLM server answers at {url}/health" in down
    assert "1 GPU(s) visible, the preset needs 2" in down


def test_dry_run_commands_carry_the_overrides():
    result = CliRunner().invoke(
        app, ["run", "--preset", "8xh100", "--set", "grpo.max_steps=3", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    (train,) = [line for line in result.output.splitlines() if line.startswith("train: ")]
    assert train.endswith(
        "-m tbrl_lib.cli train run --preset 8xh100 --out outputs/train --set grpo.max_steps=3"
    )


def test_a_local_engine_that_does_not_answer_says_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    (line,) = sandbox_problems(load_preset("cpu-smoke"))
    assert "needs a Docker engine" in line and "DOCKER_HOST" in line


ASYNC_PRESETS = ["1xh200-async", "8xh100-async", "16xh100-async", "32xh100-async"]


@pytest.mark.parametrize("name", ASYNC_PRESETS)
def test_async_presets_have_no_setting_problem_and_refuse_only_for_this_machine(name):
    config = load_preset(name)
    assert setting_problems(config) == []
    result = CliRunner().invoke(app, ["preflight", name])
    assert result.exit_code == 2 and f"preset {name} cannot run here" in result.output
    assert "async" not in result.output.replace(name, ""), result.output


def test_8xh100_async_needs_the_servers_two_gpus_until_it_answers(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "6")
    monkeypatch.setenv("TBRL_FAKE_GPUS", "8:80")
    problems = preflight(load_preset("8xh100-async"))
    assert not any("world size" in p or "GPU(s) visible" in p for p in problems), problems
    monkeypatch.setenv("TBRL_FAKE_GPUS", "6:80")
    assert "6 GPU(s) visible, the preset needs 8" in "\n".join(
        preflight(load_preset("8xh100-async"))
    )


def test_1xh200_async_needs_one_gpu_and_no_vllm(monkeypatch):
    monkeypatch.setenv("TBRL_FAKE_GPUS", "1:141")
    problems = preflight(load_preset("1xh200-async"))
    assert not any("GPU" in p or "world size" in p or "vllm" in p for p in problems), problems


def test_dry_run_of_an_async_preset_shows_its_plan_and_split_commands():
    result = CliRunner().invoke(app, ["run", "--preset", "8xh100-async", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "memory plan for 8xh100-async" in result.output
    assert "vllm_server: CUDA_VISIBLE_DEVICES=6,7 env VLLM_SERVER_DEV_MODE=1 vllm serve" in (
        result.output
    )
    assert "train: CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 accelerate launch" in result.output
    plan = CliRunner().invoke(app, ["plan", "1xh200-async"])
    assert plan.exit_code == 0 and "worker copy" in plan.output and "fits" in plan.output
