"""Notebook tables show settings and numbers as text a person reads (no reprs), and each
warning appears once."""

from __future__ import annotations

import io
import logging
import warnings
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from tbrl_lib.notebook_tools import show_config, show_summary, warn_once
from tbrl_lib.train.config.presets import load_preset


class Mode(str, Enum):
    fast = "fast"


class Inner(BaseModel):
    memory_mb: int = 2048
    hosts: tuple[str, ...] = ("unix://a", "tcp://b")


class Outer(BaseModel):
    name: str = "run"
    sandbox: Inner = Inner()
    mode: Mode = Mode.fast
    out: Path = Path("outputs/x")
    lr: float = 1e-6
    extra: dict = {"seed": 0}


@dataclass
class Plain:
    steps: int = 2
    tags: list = field(default_factory=list)


def test_nested_fields_are_flattened_with_dots_and_shown_as_text():
    table = show_config(Outer())
    assert list(table.index) == [
        "name",
        "sandbox.memory_mb",
        "sandbox.hosts",
        "mode",
        "out",
        "lr",
        "extra.seed",
    ]
    values = table["value"].to_dict()
    assert values["sandbox.hosts"] == "unix://a, tcp://b"  # not a tuple repr
    assert values["mode"] == "fast" and values["out"] == "outputs/x" and values["lr"] == "1e-06"
    assert table.index.name == "setting"


def test_dataclasses_mappings_and_a_real_preset():
    assert show_config(Plain())["value"].to_dict() == {"steps": "2", "tags": "-"}
    preset = show_config(load_preset("cpu-smoke"))
    assert "TrainConfig(" not in preset.to_string() and preset.loc["preset", "value"] == "cpu-smoke"
    assert preset.loc["rollout.episode.max_turns", "value"] == "3"  # nested sections, dotted
    numbers = show_summary({"accuracy": 0.5, "accuracy_ci": [0.1, 0.9], "pass_at_k": {"1": 0.5}})
    assert numbers.index.name == "headline number"
    assert numbers["value"].to_dict() == {
        "accuracy": "0.5",
        "accuracy_ci": "0.1, 0.9",
        "pass_at_k.1": "0.5",
    }


def test_each_warning_is_shown_once():
    logger = logging.getLogger("tbrl_lib.test_display")
    root = logging.getLogger()
    shown = io.StringIO()
    handler = logging.StreamHandler(shown)  # what a notebook's stderr handler would print
    root.addHandler(handler)
    saved = {h: list(h.filters) for h in root.handlers}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warn_once()
            for _ in range(3):
                warnings.warn("storage is not limited", UserWarning, stacklevel=1)
                logger.warning("docker host cannot limit container storage")
            logger.warning("a different warning")
    finally:
        root.removeHandler(handler)
        for h, filters in saved.items():
            h.filters = filters
    assert len([w for w in caught if "storage" in str(w.message)]) == 1
    text = shown.getvalue()
    assert text.count("cannot limit container storage") == 1 and "a different warning" in text
