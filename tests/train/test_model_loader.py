"""1xh200 asks for unsloth; without the package (as here) it loads with PEFT and says so once."""

from __future__ import annotations

import importlib.util
import logging
import sys

import pytest

from tbrl_lib.train.model_loader import choose_loader, load_policy
from tbrl_lib.train.presets import load_preset
from tbrl_lib.train.run import lora_config


@pytest.fixture()
def no_unsloth(monkeypatch):
    """unsloth absent even on a machine that has it (find_spec answers None for it only)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "unsloth" else real(name, *a)
    )


def test_1xh200_without_unsloth_loads_with_peft_and_says_so_once(no_unsloth, caplog):
    config = load_preset("1xh200")
    assert config.model_loader == "unsloth"
    peft = lora_config(config)
    with caplog.at_level(logging.INFO, logger="tbrl.train"):
        model, peft_config = load_policy(config, "/models/qwen3-8b", peft)
    assert model == "/models/qwen3-8b" and peft_config is peft  # TRL loads and wraps it
    (record,) = caplog.records
    assert "unsloth is not installed" in record.getMessage() and "PEFT" in record.getMessage()
    assert "unsloth" not in sys.modules  # nothing imported it


def test_presets_that_do_not_ask_or_cannot_use_unsloth_get_peft(no_unsloth, caplog):
    with caplog.at_level(logging.INFO, logger="tbrl.train"):
        assert choose_loader(load_preset("2xa100")) == "peft"
        assert not caplog.records  # not asked: no line
        multi = load_preset("8xh100", {"model_loader": "unsloth", "use_lora": True})
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
    with pytest.raises(ValueError, match="model_loader"):
        load_preset("1xh200", {"model_loader": "liger"})
