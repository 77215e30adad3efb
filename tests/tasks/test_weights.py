"""Weighted scoring: the rules in tbrl_lib/tasks/weights.py, and the same code run as the
in-container reward script against a real pytest JUnit report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tbrl_lib.tasks import model
from tbrl_lib.tasks import weights as weights_module
from tbrl_lib.tasks.weights import function_key, outcomes_from_junit_xml, weighted_score

PYTEST_SOURCE = """
import pytest

def test_a():
    assert True

def test_b():
    assert False

@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n != 3

class TestGroup:
    def test_inner(self):
        assert True
"""


def weighted(**weights: float) -> model.Tests:
    return model.Tests(pytest=PYTEST_SOURCE, weights=weights)


@pytest.mark.parametrize(
    "raw, key",
    [
        ("test_a", "test_a"),
        ("tests/test_outputs.py::test_a", "test_a"),
        ("test_outputs.py::TestGroup::test_inner", "TestGroup::test_inner"),
        ("test_param[1]", "test_param"),
        ("tests/test_outputs.py::test_param[a::b-c[d]]", "test_param"),
    ],
)
def test_function_key_reduces_node_ids_to_weight_names(raw, key):
    assert function_key(raw) == key


def test_weights_apply_per_function():
    tests = weighted(test_a=0.6, test_b=0.4)
    assert weighted_score(tests, {"test_a": True, "test_b": False}) == pytest.approx(0.6)
    assert weighted_score(tests, {"test_a": True, "test_b": True}) == pytest.approx(1.0)


def test_weighted_test_that_never_ran_counts_as_failed():
    # upstream dropped missing tests from the denominator and would have given 1.0 here
    tests = weighted(test_a=0.25, test_b=0.75)
    assert weighted_score(tests, {"test_a": True}) == pytest.approx(0.25)
    assert weighted_score(tests, {}) == 0.0


def test_unweighted_tests_count_nothing_when_weights_are_given():
    tests = weighted(test_a=1.0)
    assert weighted_score(tests, {"test_a": False, "TestGroup::test_inner": True}) == 0.0


def test_no_weights_means_equal_weights_over_defined_tests():
    tests = model.Tests(
        pytest=PYTEST_SOURCE
    )  # 4 functions: test_a, test_b, test_param, TestGroup::test_inner
    assert weighted_score(tests, {"test_a": True, "TestGroup::test_inner": True}) == pytest.approx(
        0.5
    )


def test_parametrized_function_passes_only_if_every_instance_passed():
    tests = weighted(test_param=1.0, test_a=1.0)
    ok = {"test_param[1]": True, "test_param[2]": True, "test_a": True}
    assert weighted_score(tests, ok) == pytest.approx(1.0)
    assert weighted_score(tests, {**ok, "test_param[3]": False}) == pytest.approx(0.5)


def test_script_only_tests_weigh_reported_functions_equally():
    tests = model.Tests(script="bash run.sh")
    assert weighted_score(
        tests, {"x::test_1": True, "test_2[a]": False, "test_2[b]": True}
    ) == pytest.approx(0.5)
    assert weighted_score(tests, {}) == 0.0


def run_pytest_junit(tmp_path: Path) -> Path:
    test_file = tmp_path / "test_outputs.py"
    test_file.write_text(PYTEST_SOURCE)
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            str(test_file),
        ],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return junit


def test_outcomes_from_a_real_junit_report(tmp_path):
    outcomes = outcomes_from_junit_xml(run_pytest_junit(tmp_path).read_text())
    assert outcomes == {
        "test_a": True,
        "test_b": False,
        "test_param[1]": True,
        "test_param[2]": True,
        "test_param[3]": False,
        "TestGroup::test_inner": True,
    }
    assert weighted_score(weighted(test_a=3, test_param=1), outcomes) == pytest.approx(0.75)


def test_script_mode_writes_reward_file(tmp_path):
    junit = run_pytest_junit(tmp_path)
    (tmp_path / "w.json").write_text('{"test_a": 0.5, "TestGroup::test_inner": 0.3, "test_b": 0.2}')
    reward_file = tmp_path / "reward.txt"
    done = subprocess.run(
        [
            sys.executable,
            weights_module.__file__,
            str(junit),
            str(tmp_path / "w.json"),
            str(reward_file),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert float(reward_file.read_text()) == pytest.approx(0.8)


def test_script_mode_scores_zero_without_a_report(tmp_path):
    reward_file = tmp_path / "reward.txt"
    done = subprocess.run(
        [
            sys.executable,
            weights_module.__file__,
            str(tmp_path / "missing.xml"),
            str(tmp_path / "no-weights.json"),
            str(reward_file),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and float(reward_file.read_text()) == 0.0
    assert "no usable JUnit report" in done.stderr
