"""The memory planner against numbers computed by hand."""

from __future__ import annotations

import pytest

from tbrl_lib.train.config import TrainConfig
from tbrl_lib.train.memory import GIB, KNOWN_SHAPES, ModelShape, model_shape, plan_memory
from tbrl_lib.train.presets import load_preset


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
    for name in ["1xh200", "2xa100", "8xh100", "32xh100"]:
        plan = plan_memory(load_preset(name))
        assert plan.fits, plan.table()


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
    from tbrl_lib.train.memory import model_shape, plan_text
    from tbrl_lib.train.presets import load_preset

    assert model_shape("tiny").parameters() > 0
    assert "total" in plan_text(load_preset("cpu-smoke"))


def test_sgd_keeps_no_optimizer_state():
    # cpu-demo trains with plain SGD (fp32): no moments, so its optimizer row is empty;
    # AdamW on the same preset keeps two fp32 moments, twice the fp32 gradients
    from tbrl_lib.train.memory import plan_memory
    from tbrl_lib.train.presets import load_preset

    def rows(config) -> dict[str, float]:
        return {name: gib for name, gib, _ in plan_memory(config).rows}

    assert rows(load_preset("cpu-demo"))["optimizer"] == 0
    adam = rows(load_preset("cpu-demo", {"grpo.optimizer": "adamw_torch"}))
    assert adam["optimizer"] == pytest.approx(2 * adam["gradients"]) and adam["optimizer"] > 0
