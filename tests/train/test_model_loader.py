"""1xh200 asks for unsloth; without the package (as here) it loads with PEFT and says so once."""

from __future__ import annotations

import importlib.util
import logging
import sys

import pytest

from tbrl_lib.train.model_loader import choose_loader, load_policy
from tbrl_lib.train.presets import load_preset


@pytest.fixture()
def no_unsloth(monkeypatch):
    """unsloth absent even on a machine that has it (find_spec answers None for it only)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "unsloth" else real(name, *a)
    )


def test_1xh200_without_unsloth_loads_with_peft_and_says_so_once(no_unsloth, caplog):
    config = load_preset("1xh200")
    assert config.model.loader == "unsloth"
    with caplog.at_level(logging.INFO, logger="tbrl.train"):
        model, peft_config = load_policy(config, "/models/qwen3-8b")
    assert model == "/models/qwen3-8b"  # TRL loads it and wraps it with the adapter
    assert (peft_config.r, peft_config.lora_alpha) == (64, 128)
    assert set(peft_config.target_modules) == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }
    (record,) = caplog.records
    assert "unsloth is not installed" in record.getMessage() and "PEFT" in record.getMessage()
    assert "unsloth" not in sys.modules  # nothing imported it


def test_presets_that_do_not_ask_or_cannot_use_unsloth_get_peft(no_unsloth, caplog):
    with caplog.at_level(logging.INFO, logger="tbrl.train"):
        assert choose_loader(load_preset("2xa100")) == "peft"
        assert not caplog.records  # not asked: no line
        multi = load_preset("8xh100", {"model.loader": "unsloth", "model.use_lora": True})
        assert choose_loader(multi) == "peft"
    assert "1-GPU LoRA" in caplog.records[0].getMessage()


def test_unsloth_is_chosen_when_importable(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "unsloth" else real(name, *a),
    )
    assert choose_loader(load_preset("1xh200")) == "unsloth"
    with pytest.raises(ValueError, match="model.loader"):
        load_preset("1xh200", {"model.loader": "liger"})
