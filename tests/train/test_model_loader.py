"""1xh200 asks for unsloth; without the package (as here) it loads with PEFT and says so once."""

from __future__ import annotations

import importlib.util
import logging
import sys

import pytest

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.model.model_loader import choose_loader, load_policy


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


IMPORT_ORDER = """
import json, sys

order = []


class Recorder:  # first imports of the packages unsloth patches, and of unsloth
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in ("unsloth", "transformers", "trl", "peft") and top not in order:
            order.append(top)
        return None


sys.meta_path.insert(0, Recorder())
cells = json.loads(open("notebooks/04_train.ipynb").read())["cells"]
code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
parameters = next(
    "".join(c["source"]) for c in cells if "parameters" in c["metadata"].get("tags", [])
)
imports = next(source for source in code if "require_runnable(" in source)
namespace = {}
exec(parameters, namespace)
namespace["preset"] = "1xh200"  # model.loader: unsloth
try:
    exec(imports, namespace)  # the notebook's import cell, as written
except SystemExit:  # preflight refused this CPU machine: what the cell imports next
    import tbrl_lib.train.report.run_files, tbrl_lib.train.grpo.training  # noqa: E401
print(json.dumps(order))
"""


@pytest.mark.slow
def test_notebook_04_imports_unsloth_before_transformers(tmp_path):
    """The notebook's own import cell with an unsloth preset: unsloth is imported before
    transformers, TRL or PEFT. unsloth needs a CUDA GPU to install and import, so a stand-in
    package takes its place; the order is recorded by a sys.meta_path hook."""
    import json
    import os
    import subprocess
    from pathlib import Path

    stand_in = tmp_path / "unsloth"
    stand_in.mkdir()
    (stand_in / "__init__.py").write_text("")
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{repo}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_ORDER],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    order = json.loads(proc.stdout.strip().splitlines()[-1])
    assert order[0] == "unsloth" and "transformers" in order, order


def test_unsloth_imported_after_transformers_is_named(monkeypatch, tmp_path, caplog):
    """A kernel that loaded transformers before the preset check gets told to restart."""
    import transformers  # noqa: F401

    from tbrl_lib.train.model.model_loader import import_early

    (tmp_path / "unsloth").mkdir()
    (tmp_path / "unsloth" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with caplog.at_level(logging.WARNING, logger="tbrl.train"):
            import_early(load_preset("1xh200"))
        assert sys.modules["unsloth"].__file__ == str(tmp_path / "unsloth" / "__init__.py")
    finally:
        sys.modules.pop("unsloth", None)  # the stand-in must not outlive the test
    assert "unsloth is imported after transformers" in caplog.text
