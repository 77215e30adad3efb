"""`tbrl eval harbor` refuses, in one line and before touching Docker, what cannot run here:
a Harbor registry dataset (offline) and a policy that loads a model in-process (Harbor's
image has no torch)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--tasks", "terminal-bench@2.0"), "cannot be fetched offline"),
        (("--tasks", "data/tasks", "--policy", "hf:smollm2-135m"), "vllm serve"),
        (("--tasks", "data/tasks", "--policy", "vllm:tiny"), "--policy openai:"),
    ],
)
def test_refused_in_one_line(tbrl, args, says):
    result = tbrl("eval", "harbor", *args)
    assert result.code == 2 and says in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and result.err.startswith("error: ")
