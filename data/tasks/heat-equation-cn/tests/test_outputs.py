import csv
import math
import sys

sys.path.insert(0, "/app")


def exact(x, t, alpha=1.0):
    return (math.exp(-alpha * math.pi ** 2 * t) * math.sin(math.pi * x)
            + 0.5 * math.exp(-9 * alpha * math.pi ** 2 * t) * math.sin(3 * math.pi * x))


def max_err(alpha, nx, nt, t_end):
    import heat
    u = heat.solve(alpha, nx, nt, t_end)
    assert len(u) == nx + 1
    return max(abs(u[i] - exact(i / nx, t_end, alpha)) for i in range(nx + 1))


def test_accuracy():
    assert max_err(1.0, 50, 100, 0.1) < 2e-4
    assert max_err(0.5, 40, 80, 0.2) < 2e-4


def test_boundaries():
    import heat
    u = heat.solve(1.0, 20, 10, 0.05)
    assert abs(u[0]) < 1e-12 and abs(u[-1]) < 1e-12


def test_second_order_convergence():
    e1 = max_err(1.0, 20, 20, 0.1)
    e2 = max_err(1.0, 40, 40, 0.1)
    assert 3.0 < e1 / e2 < 5.0, (e1, e2)


def test_stable_large_steps():
    import heat
    u = heat.solve(1.0, 100, 5, 0.5)
    assert all(math.isfinite(v) for v in u) and max(abs(v) for v in u) < 0.2


def test_profile_csv():
    rows = list(csv.DictReader(open("/app/heat_profile.csv")))
    assert len(rows) == 51
    for i, r in enumerate(rows):
        assert abs(float(r["x"]) - i / 50) < 1e-9
        assert abs(float(r["u"]) - exact(i / 50, 0.1)) < 2e-4
