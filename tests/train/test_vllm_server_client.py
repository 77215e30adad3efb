"""The vllm-server generation path against a loopback HTTP server that speaks what
`vllm serve` (vLLM's OpenAI server with TRL's flags, as the launch files start it) answers TRL's `VLLMClient`:
GET /health, GET /v1/models, POST /v1/completions with token-id prompts,
`return_token_ids` and `return_tokens_as_token_ids` log-probs.

What runs for real: tbrl's `VLLMBackend` (server mode, the client a non-main rank builds for
itself), TRL's `VLLMClient` HTTP code and log-prob parser, and the `BatchingGenerator` in
front. What does not: vLLM itself and the NCCL weight sync (`init_communicator`,
`update_named_params`), which need a GPU. TRL's client refuses to start without the vllm
package, so that one availability check is patched.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tbrl_lib.policies.batching import BatchingGenerator
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.model.trainer_policy import VLLMBackend, sampled_logprobs

MODEL = "Qwen/Qwen3-8B"


class FakeVLLM(http.server.BaseHTTPRequestHandler):
    """A deterministic 'model': continues a prompt with last+1, last+2, ...; stops on `stop`.

    Position i's log-prob is -0.1 * (i + 1); every position also lists a more likely
    alternative token first, as a top-k reply does.
    """

    requests: list[dict] = []
    stop_after = 3  # the 4th generated token is the stop token when one is asked for

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/health":
            self._send(200, {})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._send(404, {"error": self.path})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions":
            return self._send(404, {"error": self.path})
        FakeVLLM.requests.append(body)
        choices = []
        for prompt in body["prompt"]:
            for _ in range(body["n"]):
                choices.append(self._choice(prompt, body))
        self._send(200, {"id": "cmpl-1", "object": "text_completion", "choices": choices})

    def _choice(self, prompt: list[int], body: dict) -> dict:
        stops = body.get("stop_token_ids") or []
        ids = [prompt[-1] + 1 + i for i in range(body["max_tokens"])]
        if stops and len(ids) > self.stop_after:
            ids = ids[: self.stop_after] + [stops[0]]
        tokens = [f"token_id:{t}" for t in ids]
        logps = [-0.1 * (i + 1) for i in range(len(ids))]
        tops = [{f"token_id:{t + 1000}": -0.01, tok: lp} for t, tok, lp in zip(ids, tokens, logps)]
        return {
            "index": 0,
            "text": "",
            "prompt_token_ids": prompt,
            "token_ids": ids,
            "finish_reason": "stop" if stops and ids[-1] in stops else "length",
            "logprobs": {"tokens": tokens, "token_logprobs": logps, "top_logprobs": tops},
        }

    def log_message(self, *args):
        pass


@pytest.fixture()
def server_url(monkeypatch):
    import trl.generation.vllm_client as vllm_client

    monkeypatch.setattr(vllm_client, "is_vllm_available", lambda *a, **k: True)
    FakeVLLM.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeVLLM)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def fake_trainer(url: str, tokenizer) -> SimpleNamespace:
    """What VLLMBackend reads of a GRPOTrainer in server mode on a rank without a client."""
    generation = SimpleNamespace(
        mode="server",
        vllm_client=None,
        server_base_url=url,
        server_host="0.0.0.0",
        server_port=8000,
        server_timeout=5.0,
    )
    return SimpleNamespace(vllm_generation=generation, processing_class=tokenizer)


def test_server_mode_generates_exact_ids_and_sampled_logprobs(server_url, tiny_tokenizer):
    backend = VLLMBackend(fake_trainer(server_url, tiny_tokenizer), temperature=1.2, top_p=0.9)
    eos = tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")
    samples = backend.generate([[10, 11, 12], [20]], max_new_tokens=6)
    (request,) = FakeVLLM.requests
    assert request["prompt"] == [[10, 11, 12], [20]] and request["model"] == MODEL
    assert request["max_tokens"] == 6 and request["n"] == 1
    assert request["temperature"] == 1.2 and request["top_p"] == 0.9
    assert request["logprobs"] == 0 and request["stop_token_ids"] == [eos]
    assert request["return_token_ids"] and request["return_tokens_as_token_ids"]
    assert [s.ids for s in samples] == [[13, 14, 15, eos], [21, 22, 23, eos]]
    assert all(s.stopped for s in samples)
    # the sampled token's log-prob, not the more likely alternative listed first
    assert samples[0].logprobs == pytest.approx([-0.1, -0.2, -0.3, -0.4])
    # the rank built its own client once and reuses it
    client = backend.generation.vllm_client
    backend.generate([[5]], 2)
    assert backend.generation.vllm_client is client and len(FakeVLLM.requests) == 2


def test_concurrent_episodes_share_one_http_request(server_url, tiny_tokenizer):
    backend = VLLMBackend(fake_trainer(server_url, tiny_tokenizer), temperature=1.0)
    generator = BatchingGenerator(backend, window_s=0.05)

    async def main():
        try:
            return await asyncio.gather(*(generator.sample([30 + i], 2) for i in range(4)))
        finally:
            await generator.aclose()

    results = asyncio.run(main())
    assert len(FakeVLLM.requests) == 1 and len(FakeVLLM.requests[0]["prompt"]) == 4
    assert [r.ids for r in results] == [[31 + i, 32 + i] for i in range(4)]
    assert all(not r.stopped for r in results)  # cut by max_new_tokens, not by the stop token


def test_a_server_that_does_not_answer_is_named(server_url, tiny_tokenizer):
    trainer = fake_trainer("http://127.0.0.1:9", tiny_tokenizer)
    trainer.vllm_generation.server_timeout = 0.0
    backend = VLLMBackend(trainer, temperature=1.0)
    with pytest.raises(RuntimeError, match="no vLLM server answers at http://127.0.0.1:9"):
        backend.generate([[1]], 2)
    assert trainer.vllm_generation.vllm_client is None


def test_sampled_logprobs_looks_the_sampled_token_up_by_id():
    assert sampled_logprobs([7, 8], [[-0.5], [-0.2]], None) == [-0.5, -0.2]
    assert sampled_logprobs([7, 8], [[-0.01, -0.5], [-0.2, -3.0]], [[99, 7], [8, 5]]) == [
        -0.5,
        -0.2,
    ]
    assert sampled_logprobs([7], [[None]], [[7]]) == [0.0]
    assert sampled_logprobs([7], None, None) is None


def test_importance_sampling_settings_reach_grpo_config(tmp_path: Path):
    from tbrl_lib.train.grpo.trainer import grpo_args

    # dtype fp32: TrainingArguments refuses bf16 on a machine without a GPU
    args = grpo_args(load_preset("2xa100", {"model.dtype": "fp32"}), tmp_path)
    assert args.use_vllm and args.vllm_mode == "server"
    assert args.vllm_importance_sampling_mode == "token_truncate"
    assert args.vllm_importance_sampling_clip_max == 3.0
    args = grpo_args(
        load_preset(
            "1xh200",
            {"model.dtype": "fp32", "grpo.vllm_is_level": "sequence", "grpo.vllm_is_cap": 2.0},
        ),
        tmp_path,
    )
    assert args.vllm_mode == "colocate"
    assert args.vllm_importance_sampling_mode == "sequence_truncate"
    assert args.vllm_importance_sampling_clip_max == 2.0
    with pytest.raises(ValueError, match="vllm_is_level"):
        load_preset("1xh200", {"grpo.vllm_is_level": "chunk"})


def test_the_async_pipeline_samples_from_the_server_and_pushes_weights_once_a_step(
    server_url, tiny_tokenizer
):
    """`grpo.async_rollouts` with `vllm-server`: the worker's episodes sample from the server
    (its continuations and log-probs reach TRL), and the trainer pushes its weights with TRL's
    server sync once per call, before queueing the step's groups (the NCCL transfer itself
    needs a GPU; `sync_weights` is counted here)."""
    from tbrl_lib.train.model.trainer_policy import TrainerPolicy
    from tbrl_lib.train.pipeline.async_pipeline import AheadRolloutFunc
    from tests.train.test_async_rollouts import sampling_episode
    from tests.train.test_step_runner import make_runner, make_task, row

    tasks = [make_task("a"), make_task("b")]
    runner, rollout_func = make_runner(tasks, sampling_episode(), concurrency=4)
    trainer = fake_trainer(server_url, tiny_tokenizer)
    trainer.state = SimpleNamespace(global_step=0, max_steps=2)
    pushes: list[int] = []
    trainer.vllm_generation.sync_weights = lambda: pushes.append(trainer.state.global_step)
    policy = TrainerPolicy(tiny_tokenizer, "vllm-server", 1.0, 1.0, 64)
    ahead = AheadRolloutFunc(rollout_func.index, runner, policy, 2, 1, 30, concurrency=4)
    prompts = [row(t)["prompt"] for t in tasks for _ in range(2)]
    try:
        first = ahead(prompts, trainer)
        trainer.state.global_step = 1
        second = ahead(prompts, trainer)
    finally:
        ahead.close()
    assert pushes == [0, 1]
    eos = tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")
    for out in (first, second):
        assert out["completion_ids"] == [[10, 11, 12, eos]] * 4  # the server's continuation
        assert out["logprobs"] == [pytest.approx([-0.1, -0.2, -0.3, -0.4])] * 4
    assert ahead.versions == [0] * 4  # step 1 trained what was queued after push 0
    assert runner.calls == 2
    # 8 episodes in all (step 0's groups queued twice, none at the last step), which the
    # batching front sent to the server a few at a time
    assert sum(len(r["prompt"]) for r in FakeVLLM.requests) == 8
