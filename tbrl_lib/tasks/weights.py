"""Weighted test score: one number in [0, 1] from per-test outcomes and the task's weights.

Rules (the upstream code silently dropped weighted tests that never ran from the
denominator, which rewarded crashing the test run; here they count as failed):

- Weights are per test *function*: `test_x` or `Class::test_x` (as `Task.tests` names them).
- A weighted test with no outcome (never collected, never ran, skipped) counts as failed.
- Tests that ran but carry no weight (when weights are given) count for nothing.
- No weights: every test weighs the same. The tests are the task's pytest functions; when
  the task has no pytest source (script-only), the functions that reported an outcome.
- Outcome keys may be pytest node ids (`tests/test_outputs.py::TestA::test_x[p1]`), bare
  names, or JUnit `classname`/`name` pairs (see `outcomes_from_junit_xml`); they are reduced
  to function names with `function_key`.
- Parametrized tests: `test_x[a]`, `test_x[b]` all count toward `test_x`, which passes only
  if *every* instance that ran passed (one function = one requirement; a partial pass of a
  parametrized check is still a failed check). Duplicated outcomes combine the same way.

This module is standard-library only on purpose: the Harbor writer embeds its source in the
generated `tests/test.sh`, so the reward computed inside the task container and the one
computed by `tbrl_lib.rewards` in-process are the same code and cannot drift. Run as a
script (`python3 weights.py JUNIT_XML [WEIGHTS_JSON] [REWARD_TXT]`) it does exactly that.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only; keeps the module stdlib-only at runtime
    from tbrl_lib.tasks.model import Tests


def function_key(test_id: str) -> str:
    """Reduce a pytest node id or test name to the function key weights use.

    `tests/test_outputs.py::TestA::test_x[a-b]` -> `TestA::test_x`; `test_y[1]` -> `test_y`.
    """
    key = test_id.strip()
    bracket = key.find("[")
    if bracket != -1 and key.endswith("]"):
        key = key[:bracket]
    parts = [p for p in key.split("::") if p]
    while len(parts) > 1 and (parts[0].endswith(".py") or "/" in parts[0]):
        parts.pop(0)
    return "::".join(parts)


def function_outcomes(outcomes: Mapping[str, bool]) -> dict[str, bool]:
    """Per-function outcomes: every instance of a function must have passed."""
    merged: dict[str, bool] = {}
    for test_id, passed in outcomes.items():
        key = function_key(test_id)
        merged[key] = merged.get(key, True) and bool(passed)
    return merged


def score_outcomes(
    weights: Mapping[str, float], test_names: list[str], outcomes: Mapping[str, bool]
) -> float:
    """The weighted fraction of passed test functions, in [0, 1].

    `weights` may be empty (equal weights over `test_names`, or over the functions in
    `outcomes` when `test_names` is empty too). Returns 0.0 when nothing can be scored.
    """
    passed = function_outcomes(outcomes)
    if weights:
        table = {name: float(w) for name, w in weights.items()}
    else:
        names = test_names or sorted(passed)
        table = {name: 1.0 for name in names}
    total = sum(w for w in table.values() if w > 0)
    if total <= 0:
        return 0.0
    earned = sum(w for name, w in table.items() if w > 0 and passed.get(name, False))
    return max(0.0, min(1.0, earned / total))


def weighted_score(tests: Tests, outcomes: Mapping[str, bool]) -> float:
    """Score a task's `Tests` given `{test id: passed}` (see the module docstring)."""
    names = tests.test_names() if tests.pytest else []
    return score_outcomes(tests.weights, names, outcomes)


def outcomes_from_junit_xml(xml_text: str) -> dict[str, bool]:
    """`{Class::test[param] or test[param]: passed}` from a pytest JUnit XML report.

    A testcase passes when it has no failure, error or skipped child. Class names come
    from the `Test*` tail of the dotted `classname` (`tests.test_outputs.TestA`).
    """
    root = ET.fromstring(xml_text)
    outcomes: dict[str, bool] = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if not name:
            continue
        classes = []
        for part in reversed(case.get("classname", "").split(".")):
            if not part.startswith("Test"):
                break
            classes.insert(0, part)
        test_id = "::".join([*classes, name])
        bad = any(child.tag in ("failure", "error", "skipped") for child in case)
        outcomes[test_id] = outcomes.get(test_id, True) and not bad
    return outcomes


def main(argv: list[str]) -> int:
    """`JUNIT_XML [WEIGHTS_JSON] [REWARD_TXT]`: print (and write) the weighted reward.

    A missing or unreadable JUnit report scores 0.0 (the tests never ran). A missing
    weights file means equal weights over the test functions in the report.
    """
    if not 1 <= len(argv) <= 3:
        print("usage: weights.py JUNIT_XML [WEIGHTS_JSON] [REWARD_TXT]", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as fh:
            outcomes = outcomes_from_junit_xml(fh.read())
    except (OSError, ET.ParseError) as exc:
        print(
            f"tbrl reward: no usable JUnit report at {argv[0]} ({exc}); reward 0", file=sys.stderr
        )
        outcomes = {}
    weights: dict[str, float] = {}
    if len(argv) >= 2:
        try:
            with open(argv[1], encoding="utf-8") as fh:
                weights = {str(k): float(v) for k, v in json.load(fh).items()}
        except FileNotFoundError:
            weights = {}
    reward = score_outcomes(weights, [], outcomes)
    if len(argv) == 3:
        with open(argv[2], "w", encoding="utf-8") as fh:
            fh.write(f"{reward}\n")
    print(reward)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
