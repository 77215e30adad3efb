import math
import sys

import pytest

sys.path.insert(0, "/app")


def load():
    lines = open("/app/matrix.coo").read().split("\n")
    n = int(lines[0].split()[0])
    rows = [dict() for _ in range(n)]
    for line in lines[1:]:
        if line.strip():
            i, j, v = line.split()
            rows[int(i)][int(j)] = float(v)
    b = [float(x) for x in open("/app/rhs.txt").read().split()]
    return rows, b


def matvec_of(rows):
    return lambda v: [sum(a * v[j] for j, a in r.items()) for r in rows]


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def test_solution_file_residual():
    rows, b = load()
    x = [float(t) for t in open("/app/solution.txt").read().split()]
    assert len(x) == len(b)
    r = [bi - ai for bi, ai in zip(b, matvec_of(rows)(x))]
    assert norm(r) / norm(b) < 1e-9


def test_cg_on_diagonal_converges_in_distinct_eigenvalue_steps():
    import cg
    diag = [2.0, 2.0, 5.0, 5.0, 9.0]
    x, its = cg.conjugate_gradient(lambda v: [d * t for d, t in zip(diag, v)], [1.0] * 5, tol=1e-12)
    assert its <= 3
    assert all(abs(xi - 1 / d) < 1e-10 for xi, d in zip(x, diag))


def test_cg_matches_direct_solve():
    import cg
    rows, b = load()
    x, its = cg.conjugate_gradient(matvec_of(rows), b, tol=1e-11)
    r = [bi - ai for bi, ai in zip(b, matvec_of(rows)(x))]
    assert norm(r) <= 1e-11 * norm(b) * 1.0000001
    assert 1 <= its <= len(b)


def test_zero_rhs_and_nonconvergence():
    import cg
    x, its = cg.conjugate_gradient(lambda v: v, [0.0, 0.0, 0.0])
    assert x == [0.0, 0.0, 0.0] and its == 0
    with pytest.raises(RuntimeError):
        cg.conjugate_gradient(matvec_of(load()[0]), load()[1], tol=1e-14, max_iter=2)
