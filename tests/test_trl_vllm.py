"""TRL's vLLM-range warning is said once: a pure decision on versions, a `tbrl doctor` row,
and TRL's own five import warnings silenced once tbrl's training code is loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tbrl_lib import doctor, trl_vllm
from tbrl_lib.trl_vllm import outside_range, range_note, release
from tests.conftest import REPO


def test_versions_compare_by_their_release_numbers():
    assert release("0.32.0+cpu") == (0, 32) == release("0.32")  # a local segment is ignored
    assert release("0.31.1rc2") == (0, 31, 1) and release("cuda") is None
    assert not outside_range("0.21.0", "0.21.0", "0.31.0")  # both ends are inside
    assert not outside_range("0.31.0+cu129", "0.21.0", "0.31.0")
    assert outside_range("0.31.1", "0.21.0", "0.31.0")
    assert outside_range("0.20.9", "0.21.0", "0.31.0")
    assert outside_range("0.9.2", "0.21.0", "0.31.0")  # numbers, not text: 9 < 21
    assert outside_range("dev", "0.21.0", "0.31.0")  # unreadable: said, not hidden


def test_the_note_names_both_versions_and_the_range_only_when_outside():
    assert range_note("1.15.0", "0.30.2", "0.21.0", "0.31.0") is None
    note = range_note("1.15.0", "0.32.0", "0.21.0", "0.31.0")
    assert note is not None and "\n" not in note
    assert "vLLM 0.32.0" in note and "TRL 1.15.0" in note and "0.21.0 to 0.31.0" in note


def installed_range() -> tuple[str, str, str]:
    tested = trl_vllm.tested_vllm_range()  # imported whole: pytest would collect test_*
    if tested is None:
        pytest.skip("TRL raises no vLLM-range warning here (no TRL, no vLLM, or vLLM in range)")
    return tested


def test_doctor_says_it_once_in_a_row_of_its_own():
    low, high, vllm = installed_range()  # TRL's own check warned: there is a note to make
    rows = [c for c in doctor.run_checks() if c.component == "trl + vllm versions"]
    assert len(rows) == 1 and rows[0].note and not rows[0].required
    assert f"vLLM {vllm}" in rows[0].found and f"{low} to {high}" in rows[0].found
    assert doctor._status(rows[0]) == "[yellow]note[/]"


@pytest.mark.slow
def test_loading_the_training_code_silences_trls_import_warnings():
    installed_range()  # a bare `import trl.generation` warns five times here
    code = "import tbrl_lib.train.grpo.trainer, trl.generation.vllm_client"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "TRL currently supports vLLM" not in run.stderr
