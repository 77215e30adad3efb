"""The harness: failure-mode mapping (pure) and real runs on bundled tasks (Docker)."""

from __future__ import annotations

import pytest

from tbrl_lib.evaluate.harness import failure_mode
from tbrl_lib.evaluate.results import FailureMode


@pytest.mark.parametrize(
    ("termination", "resolved", "test_timed_out", "expected"),
    [
        # tests passing wins, even after the agent ran out of time (Terminal-Bench scores it)
        ("agent_timeout", True, False, FailureMode.resolved),
        ("submitted", True, False, FailureMode.resolved),
        ("agent_timeout", False, False, FailureMode.agent_timeout),
        ("parse_error_streak", False, False, FailureMode.parse_error),
        ("no_action", False, False, FailureMode.no_action),
        ("context_overflow", False, False, FailureMode.context_overflow),
        # the agent stopped normally but the tests ran out of time
        ("submitted", False, True, FailureMode.test_timeout),
        # the agent's own reason beats the verifier timeout: it explains more
        ("agent_timeout", False, True, FailureMode.agent_timeout),
        ("submitted", False, False, FailureMode.unresolved),
        ("max_turns", False, False, FailureMode.unresolved),
        (None, False, False, FailureMode.unresolved),
    ],
)
def test_failure_mode(termination, resolved, test_timed_out, expected):
    assert failure_mode(termination, resolved, test_timed_out) == expected
