"""`tbrl_lib.train`'s face: every name notebooks import resolves, and what notebook 04's first
cell takes (the preset, the refusal) loads neither torch nor TRL."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tbrl_lib.train as face
from tests.conftest import REPO


def test_every_name_of_the_face_resolves():
    for name in face.FACE:
        assert getattr(face, name) is not None, name
    assert sorted(face.FACE) == face.__all__
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        face.nope  # noqa: B018


def test_the_first_cells_names_load_no_torch():
    probe = (
        "import sys\n"
        "from tbrl_lib.train import PreflightError, load_preset, plan_text, require_runnable\n"
        "plan_text(load_preset('32xh100'))\n"
        "print(sorted({'torch', 'trl', 'transformers'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
