import math
import sys

import pytest

sys.path.insert(0, "/app")
import odesolve  # noqa: E402


def test_exponential_decay_accuracy():
    y = odesolve.rk4(lambda t, y: [-0.8 * y[0]], 0.0, [3.0], 5.0, 50)
    assert abs(y[0] - 3 * math.exp(-4.0)) < 1e-6


def test_fourth_order_convergence():
    f = lambda t, y: [y[1], -y[0]]
    errs = []
    for n in (20, 40):
        y = odesolve.rk4(f, 0.0, [0.0, 1.0], 2 * math.pi, n)
        errs.append(abs(y[0]) + abs(y[1] - 1.0))
    ratio = errs[0] / errs[1]
    assert 12 < ratio < 20, ratio


def test_time_dependent_and_backwards():
    y = odesolve.rk4(lambda t, y: [t * t], 0.0, [0.0], 3.0, 3)
    assert abs(y[0] - 9.0) < 1e-12
    y0 = [1.0]
    back = odesolve.rk4(lambda t, y: [y[0]], 1.0, y0, 0.0, 100)
    assert abs(back[0] - math.exp(-1.0)) < 1e-8
    assert y0 == [1.0]


def test_bad_steps():
    with pytest.raises(ValueError):
        odesolve.rk4(lambda t, y: [0.0], 0.0, [1.0], 1.0, 0)


def test_decay_file():
    text = open("/app/decay.txt").read().strip()
    assert len(text.split(".")[1]) == 10
    assert abs(float(text) - 3 * math.exp(-4.0)) < 1e-6
