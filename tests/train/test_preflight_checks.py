"""Preflight refusals beyond the machine: settings that hang or desync a run, trackers that
are not installed, Docker engines that do not answer, sandboxes beyond the engines' memory,
and a vLLM server that does not answer (the GPU count of a shared node depends on it); the async
presets refuse only for what this machine lacks."""

from __future__ import annotations

import http.server
import threading
import time

import pytest
from typer.testing import CliRunner

from tbrl_lib.cli.train import app
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.preflight import (
    capacity_problems,
    preflight,
    sandbox_problems,
    setting_problems,
)


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


def test_a_docker_host_that_does_not_answer_is_named_within_seconds():
    config = load_preset("cpu-smoke", {"rollout.sandbox.docker.hosts": ["tcp://127.0.0.1:9"]})
    t0 = time.monotonic()
    problems = sandbox_problems(config)
    assert time.monotonic() - t0 < 8
    assert problems == ["Docker engine(s) not answering: tcp://127.0.0.1:9"]


@pytest.mark.docker
def test_sandboxes_beyond_the_engines_memory_are_refused(docker_client):
    assert sandbox_problems(load_preset("cpu-smoke")) == []
    (line,) = sandbox_problems(load_preset("cpu-smoke", {"launch.sandbox_concurrency": 100_000}))
    assert "100000 sandboxes in flight" in line and "lower launch.sandbox_concurrency" in line


def test_nodes_sharing_hosts_beyond_their_declared_capacity_are_refused(monkeypatch):
    """Slots are shared by one node's processes only: across nodes, preflight holds the job
    to the shared hosts' declared capacity, naming the numbers."""
    monkeypatch.delenv("VLLM_HOST", raising=False)
    over = load_preset("32xh100", {"launch.sandbox_concurrency": 32})
    (line,) = capacity_problems(over)
    assert "24 training processes (3 nodes x 8) x launch.sandbox_concurrency 32 = 768" in line
    assert "declare 128 (ssh://tbrl@docker-1 32," in line and "sandbox_concurrency <= 5" in line
    assert line in preflight(over)  # also where the hosts do not answer (none does here)
    assert capacity_problems(load_preset("32xh100")) == []  # 24 x 5 = 120 <= 128
    one_node = {"launch.sandbox_concurrency": 100, "rollout.sandbox.docker.hosts": ["tcp://a:2375"]}
    assert capacity_problems(load_preset("16xh100", one_node)) == []  # the slot files hold it
    local = {"rollout.sandbox.docker.hosts": [{"base_url": "unix:///var/run/docker.sock"}]}
    assert capacity_problems(load_preset("32xh100", local)) == []  # each node its own engine
    mixed = {
        "launch.sandbox_concurrency": 10,
        "rollout.sandbox.docker.hosts": [
            {"base_url": "tcp://a:2375", "max_concurrency": 100},
            {"base_url": "unix:///var/run/docker.sock", "max_concurrency": 40},
        ],
    }
    (line,) = capacity_problems(load_preset("32xh100", mixed))  # 240 > 100 + 3 x 40
    assert "= 240 sandboxes in flight, but rollout.sandbox.docker.hosts declare 220" in line
    assert "40 per node on local engines" in line


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
