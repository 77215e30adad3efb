"""TRL's warning about the installed vLLM, said once instead of five times.

TRL checks the installed vLLM against the versions it is tested with each time one of its
modules asks whether vLLM is there, and five of them ask on import: a training run (and its
rendered report) opened with five identical UserWarnings carrying the venv's paths. tbrl
silences that one warning where its training code first loads TRL (`tbrl_lib/train/__init__.py`
calls `silence_trl_vllm_warning`) and says it once instead: a row of `tbrl doctor` and one
console line when a training run starts (`installed_note`). The range is TRL's own, read from
its check (`tested_vllm_range`), so a TRL upgrade moves it; `range_note` is the pure decision.
Left out: every other library warning (they still show on the console; rendered reports drop
library warnings, `notebook_tools/execute.py`).
"""

from __future__ import annotations

import importlib.metadata
import re
import warnings

TRL_VLLM_WARNING = r"TRL currently supports vLLM versions"
"""The start of TRL's message (`trl.import_utils.is_vllm_available`): what the filter matches."""
_RANGE = re.compile(r"from (\S+) to (\S+?)\. You have version (\S+) installed")


def silence_trl_vllm_warning() -> None:
    """Hide TRL's vLLM-range warning from here on (the note says it once instead)."""
    warnings.filterwarnings("ignore", message=TRL_VLLM_WARNING, category=UserWarning)


def release(version: str) -> tuple[int, ...] | None:
    """The release numbers of `version` (`0.32.0+cpu` -> (0, 32): a local segment or a
    pre-release tag ignored, as TRL compares); None when it does not start with one."""
    found = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    if not found:
        return None
    numbers = [int(part) for part in found[1].split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:  # 0.31 == 0.31.0
        numbers.pop()
    return tuple(numbers)


def outside_range(version: str, low: str, high: str) -> bool:
    """Whether `version` lies outside [low, high]; one that does not parse counts as outside."""
    found, lowest, highest = release(version), release(low), release(high)
    if found is None or lowest is None or highest is None:
        return True
    return not lowest <= found <= highest


def range_note(trl: str, vllm: str, low: str, high: str) -> str | None:
    """The one line to say when vLLM `vllm` is outside the range TRL `trl` is tested with."""
    if not outside_range(vllm, low, high):
        return None
    return (
        f"vLLM {vllm} is outside the versions TRL {trl} is tested with ({low} to {high}); "
        "TRL's own warnings about it are silenced"
    )


def tested_vllm_range() -> tuple[str, str, str] | None:
    """(low, high, installed vLLM) from TRL's own check, or None when TRL does not warn (no
    TRL, no vLLM, or a vLLM inside its range) or words its warning otherwise."""
    try:  # TRL only when asked: the train extra; its import_utils load in ~0.2 s, no torch
        from trl.import_utils import is_vllm_available
    except ImportError:
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        is_vllm_available()
    for warning in caught:
        found = _RANGE.search(str(warning.message))
        if found and re.match(TRL_VLLM_WARNING, str(warning.message)):
            return found[1], found[2], found[3]
    return None


def installed_note() -> str | None:
    """The note for the TRL and vLLM installed here; None when there is nothing to say."""
    tested = tested_vllm_range()
    if tested is None:
        return None
    low, high, vllm = tested
    return range_note(importlib.metadata.version("trl"), vllm, low, high)
