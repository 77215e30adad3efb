"""The memory planner against numbers computed by hand, the async HF worker's rows included."""

from __future__ import annotations

import pytest

from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import load_preset, preset_names
from tbrl_lib.train.plan.memory_plan import (
    GENERATION_HEADROOM,
    GIB,
    KNOWN_SHAPES,
    ModelShape,
    generation_batch,
    generation_token_budget,
    model_shape,
    plan_memory,
)


@pytest.mark.parametrize(
    "model, published_billions",
    [
        ("Qwen/Qwen3-0.6B", 0.6),
        ("Qwen/Qwen3-1.7B", 1.7),
        ("Qwen/Qwen3-4B", 4.0),
        ("Qwen/Qwen3-8B", 8.2),
        ("Qwen/Qwen3-14B", 14.8),
        ("Qwen/Qwen3-32B", 32.8),
    ],
)
def test_parameter_counts_match_the_published_sizes(model, published_billions):
    assert KNOWN_SHAPES[model].parameters() / 1e9 == pytest.approx(published_billions, abs=0.05)


def test_parameter_count_by_hand_for_a_small_shape():
    shape = ModelShape(
        hidden=8,
        layers=2,
        intermediate=16,
        heads=2,
        kv_heads=1,
        head_dim=4,
        vocab=10,
        tied_embeddings=False,
    )
    # embeddings 10*8*2=160; per layer: q 8*8=64, k+v 2*8*4=64, o 8*8=64, q/k norm 8,
    # mlp 3*8*16=384, two norms 16 -> 600; final norm 8.
    assert shape.parameters() == 160 + 2 * 600 + 8
    # LoRA rank 2: q (8+8) + k,v 2*(8+4) + o (8+8) + gate/up/down 3*(8+16) = 128 per layer.
    assert shape.lora_parameters(2) == 2 * 128 * 2


def test_zero3_plan_for_8b_on_8_gpus_by_hand():
    config = TrainConfig(
        model={"name": "Qwen/Qwen3-8B"},
        grpo={"gradient_accumulation_steps": 2},
        launch={
            "gpus_per_node": 8,
            "distributed": "zero3",
            "gpu_memory_gb": 80,
            "vllm_gpu_memory_utilization": 0.3,
        },
    )
    shape = KNOWN_SHAPES["Qwen/Qwen3-8B"]
    p, tokens = shape.parameters(), 32_768
    rows = {name: gib for name, gib, _ in plan_memory(config).rows}
    assert rows["weights"] == pytest.approx(p * 2 / 8 / GIB)
    assert rows["gradients"] == pytest.approx(p * 2 / 8 / GIB)
    assert rows["optimizer"] == pytest.approx(p * 12 / 8 / GIB)
    assert rows["activations"] == pytest.approx(
        (36 * tokens * 4096 * 2 + tokens * 2 * (8 * 4096 + 3 * 12288)) / GIB
    )
    # fused head: a 4096 x 32768 bf16 tile + fp32 grads of the head (vocab x hidden) and hidden states
    assert rows["logits"] == pytest.approx(
        (4096 * 32768 * 2 + 151_936 * 4096 * 4 + tokens * 4096 * 4) / GIB
    )
    assert rows["vllm"] == pytest.approx(24.0)


def test_plan_is_close_to_the_peak_measured_on_an_h200():
    # the GPU check on one H200, TRL 1.15: Qwen3-1.7B shape, full bf16 training,
    # one 32,768-token trajectory per micro-batch, checkpointing -> torch peak 21.3 GiB.
    config = TrainConfig(
        model={"name": "Qwen/Qwen3-1.7B"},
        launch={"gpu_memory_gb": 141, "generation_backend": "hf"},
    )
    assert plan_memory(config).total_gib == pytest.approx(21.3, rel=0.15)


def test_full_32b_on_one_gpu_does_not_fit_and_says_what_to_do():
    plan = plan_memory(TrainConfig(model={"name": "Qwen/Qwen3-32B"}, launch={"gpu_memory_gb": 80}))
    assert not plan.fits
    assert "DOES NOT FIT" in plan.table() and "LoRA" in plan.table()


def test_shipped_gpu_presets_fit_their_gpus():
    gpu = [name for name in preset_names() if not load_preset(name).launch.cpu]
    assert {"1xh200", "8xh100", "32xh100", "1xh200-async", "8xh100-async"} <= set(gpu)
    for name in gpu:
        plan = plan_memory(load_preset(name))
        assert plan.fits, plan.table()


def _rows(config: TrainConfig) -> dict[str, float]:
    return {name: gib for name, gib, _ in plan_memory(config).rows}


def _hf_8b(async_rollouts: bool = True, reply_tokens: int = 4096) -> TrainConfig:
    """Qwen3-8B with LoRA on one H200, generating with HF, 2 episodes at once."""
    return TrainConfig(
        model={"name": "Qwen/Qwen3-8B", "use_lora": True, "lora_rank": 64},
        rollout={"episode": {"max_tokens_per_turn": reply_tokens}},
        grpo={"async_rollouts": async_rollouts},
        launch={"gpu_memory_gb": 141, "generation_backend": "hf", "sandbox_concurrency": 2},
    )


def test_async_hf_worker_adds_its_copy_kv_cache_and_scores_by_hand():
    shape = KNOWN_SHAPES["Qwen/Qwen3-8B"]
    rows = _rows(_hf_8b())
    # the copy: every parameter in bf16, and the LoRA adapter in fp32
    assert rows["worker copy"] == pytest.approx(
        (shape.parameters() * 2 + shape.lora_parameters(64) * 4) / GIB
    )
    # KV cache: 2 episodes x 32,768 tokens x (k, v) x 36 layers x 8 kv heads x 128 x bf16
    assert rows["worker kv"] == pytest.approx(2 * 32_768 * 2 * 36 * 8 * 128 * 2 / GIB)
    # fp32 scores of 2 x 4,096 sampled tokens over the vocabulary, held once (and one step's
    # log-softmax), lose to the prefill of 2 x 32,768 tokens through one layer
    # (2 B x (8 x 4096 + 3 x 12288) each) ...
    scores, prefill = 2 * 4098 * 151_936 * 4, 2 * 32_768 * 2 * (8 * 4096 + 3 * 12288)
    assert scores < prefill and rows["worker gen"] == pytest.approx(prefill / GIB)
    # ... and beat it at 16,384-token replies
    long = _rows(_hf_8b(reply_tokens=16_384))
    assert long["worker gen"] == pytest.approx(2 * 16_386 * 151_936 * 4 / GIB)
    # the step's own rows are what they are without the worker
    assert {k: v for k, v in rows.items() if not k.startswith("worker")} == _rows(
        _hf_8b(async_rollouts=False)
    )


def test_short_replies_leave_the_prefill_as_the_workers_peak():
    rows = {name: (gib, basis) for name, gib, basis in plan_memory(_hf_8b(reply_tokens=256)).rows}
    gib, basis = rows["worker gen"]
    assert gib == pytest.approx(2 * 32_768 * 2 * (8 * 4096 + 3 * 12288) / GIB)
    assert basis.startswith("prefill")


def test_no_worker_rows_when_generation_has_gpus_of_its_own_or_runs_between_steps():
    server = load_preset("8xh100-async")
    assert not any(name.startswith("worker") for name in _rows(server))
    assert not any(name.startswith("worker") for name in _rows(_hf_8b(async_rollouts=False)))


def test_1xh200_async_runs_episodes_its_gpu_holds():
    # 6 episodes: 102 GiB of 141, one generation batch; 12 at once would need 10 x 32k
    # tokens of KV cache beside the step: memory bounds the worker's batch to 8 episodes
    # (the other 4 wait for the next batch) and the plan fits
    assert plan_memory(load_preset("1xh200-async")).fits
    assert generation_batch(load_preset("1xh200-async")) == 6
    more = load_preset("1xh200-async", {"launch.sandbox_concurrency": 12})
    rows = _rows(more)
    assert generation_batch(more) == 8 and plan_memory(more).fits
    assert rows["worker kv"] == pytest.approx(8 * 32_768 * 2 * 36 * 8 * 128 * 2 / GIB)


def test_generation_budget_is_the_memory_left_over_a_tokens_cost_by_hand():
    # SmolLM2 in fp32 on CPU: a token's KV cache 2 x 30 layers x 3 kv heads x 64 x 4 B and its
    # prefill through one layer 4 B x (8 x 576 + 3 x 1536), which beats the sampling scores
    # spread over the context (66 x 49,152 x 4 B / 1,024 tokens)
    config = load_preset("cpu-smollm2-learn")
    per_token = 2 * 30 * 3 * 64 * 4 + 4 * (8 * 576 + 3 * 1536)
    assert 66 * 49_152 * 4 / 1024 < 4 * (8 * 576 + 3 * 1536)
    one_more_gib = generation_token_budget(config, 9.0) - generation_token_budget(config, 8.0)
    assert one_more_gib == pytest.approx(GENERATION_HEADROOM * GIB / per_token, abs=1)
    # held: the runtime, the evaluated model and the trainer's weights, gradients, optimizer
    held = plan_memory(config).phases["final evaluation"] - 8 * 1024 * per_token / GIB
    budget = generation_token_budget(config, 4.0)
    assert budget == pytest.approx((4.0 * GENERATION_HEADROOM - held) * GIB / per_token, rel=0.01)
    # a machine too small for one more episode still runs one at a time; an unknown size: none
    assert generation_token_budget(config, 1.0) == 1024
    assert generation_token_budget(config, 0) is None


def test_local_model_folder_shape_is_read_from_config_json(tmp_path):
    (tmp_path / "config.json").write_text(
        '{"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128, "num_attention_heads": 4,'
        ' "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000, "tie_word_embeddings": true}'
    )
    assert model_shape(str(tmp_path)) == ModelShape(64, 2, 128, 4, 2, 16, 1000, True)
    with pytest.raises(ValueError, match="does not know model"):
        model_shape(str(tmp_path / "missing"))


def test_plan_knows_the_local_tiny_model():
    # cpu-smoke's model is `tiny`, built on demand: the planner reads the builder's shape
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.plan.memory_plan import model_shape, plan_text

    assert model_shape("tiny").parameters() > 0
    assert "total" in plan_text(load_preset("cpu-smoke"))


def test_sgd_keeps_no_optimizer_state():
    # cpu-demo trains with plain SGD (fp32): no moments, so its optimizer row is empty;
    # AdamW on the same preset keeps two fp32 moments, twice the fp32 gradients
    from tbrl_lib.train.config.presets import load_preset
    from tbrl_lib.train.plan.memory_plan import plan_memory

    def rows(config) -> dict[str, float]:
        return {name: gib for name, gib, _ in plan_memory(config).rows}

    assert rows(load_preset("cpu-demo"))["optimizer"] == 0
    adam = rows(load_preset("cpu-demo", {"grpo.optimizer": "adamw_torch"}))
    assert adam["optimizer"] == pytest.approx(2 * adam["gradients"]) and adam["optimizer"] > 0


def test_a_phase_is_replanned_at_the_batches_it_reached_by_hand():
    # cpu-smollm2-learn's evaluations plan 8 episodes of 1,024 tokens; one whose largest batch
    # held 8 episodes of 300 tokens (replies of 40) saves the KV cache and the prefill (which
    # beats the sampling scores either way) of 8 x 724 tokens
    config = load_preset("cpu-smollm2-learn")
    episode, full = config.rollout.episode, plan_memory(config).phases
    per_token = 2 * 30 * 3 * 64 * 4 + 4 * (8 * 576 + 3 * 1536)
    short = {"generation_episodes": 8, "generation_context": 300, "generation_new": 40}
    saved = full["base evaluation"] - plan_memory(config, reached=short).phases["base evaluation"]
    assert saved == pytest.approx(8 * (1024 - 300) * per_token / GIB, abs=0.011)
    # batches as long as the plan's: the plan itself
    longest = {
        "generation_episodes": 8,
        "generation_context": episode.max_total_tokens,
        "generation_new": episode.max_tokens_per_turn,
        "training_tokens": episode.max_total_tokens * config.grpo.per_device_batch_size,
    }
    assert plan_memory(config, reached=longest).phases == full
    # a shorter GRPO micro-batch: less activations and head
    assert plan_memory(config, reached={"training_tokens": 2048}).phases["grpo"] < full["grpo"]
