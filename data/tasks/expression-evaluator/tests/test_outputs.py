import ast
import math
import sys

import pytest

sys.path.insert(0, "/app")
from calc import CalcError, evaluate  # noqa: E402


def close(a, b):
    return isinstance(a, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def test_precedence_and_associativity():
    cases = {"1 + 2 * 3": 7, "(1 + 2) * 3": 9, "10 - 4 - 3": 3, "2 ^ 3 ^ 2": 512, "100 / 10 / 5": 2,
             "7 % 4 * 2": 6, "-2 ^ 2": -4, "2 ^ -1": 0.5, "--3": 3, "-(2 + 3) * 2": -10, "8 - -2": 10}
    for expr, want in cases.items():
        assert close(evaluate(expr), want), expr


def test_numbers_variables_functions():
    assert close(evaluate(".5 + 2e3 + 1.5E-2"), 2000.515)
    assert close(evaluate("rate * hours_2", {"rate": 12.5, "hours_2": 4}), 50)
    assert close(evaluate("sqrt(16) + abs(-3) + min(4, 2, 8) + max(1, 9)"), 18)
    assert close(evaluate("max(min(3, x), 2 ^ 2) * 2", {"x": 10}), 8)
    assert close(evaluate("  7  "), 7)


def err(expr, variables=None):
    with pytest.raises(CalcError) as e:
        evaluate(expr, variables)
    assert isinstance(e.value, ValueError)
    return e.value.position


def test_syntax_error_positions():
    assert err("1 + * 2") == 4
    assert err("2 $ 3") == 2
    assert err("(1 + 2") == 6
    assert err("1 + 2)") == 5
    assert err("") == 0
    assert err("3 4") == 2


def test_semantic_error_positions():
    assert err("1 + foo", {}) == 4
    assert err("2 * bar(3)") == 4
    assert err("5 / (2 - 2)") == 2
    assert err("5 % 0") == 2
    assert err("1 + sqrt(-4)") == 4
    assert err("abs(1, 2)") == 0
    assert err("10 - min()") == 5


def test_no_eval():
    tree = ast.parse(open("/app/calc.py").read())
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & {"eval", "exec", "compile"}
    assert close(evaluate("__import__"  "_x", {"__import___x": 1.0}), 1.0)
