#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/cg.py <<'EOF'
import math


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def conjugate_gradient(matvec, b, tol=1e-10, max_iter=None):
    n = len(b)
    max_iter = n * 10 if max_iter is None else max_iter
    x = [0.0] * n
    r = list(b)
    p = list(r)
    rr = _dot(r, r)
    target = tol * math.sqrt(_dot(b, b))
    for it in range(max_iter + 1):
        if math.sqrt(rr) <= target:
            return x, it
        if it == max_iter:
            break
        ap = matvec(p)
        alpha = rr / _dot(p, ap)
        x = [xi + alpha * pi for xi, pi in zip(x, p)]
        r = [ri - alpha * api for ri, api in zip(r, ap)]
        rr_new = _dot(r, r)
        p = [ri + rr_new / rr * pi for ri, pi in zip(r, p)]
        rr = rr_new
    raise RuntimeError(f"CG did not converge in {max_iter} iterations")
EOF
python3 - <<'EOF'
import sys
sys.path.insert(0, "/app")
from cg import conjugate_gradient
lines = open("/app/matrix.coo").read().split("\n")
n = int(lines[0].split()[0])
rows = [dict() for _ in range(n)]
for line in lines[1:]:
    if line.strip():
        i, j, v = line.split()
        rows[int(i)][int(j)] = float(v)
b = [float(t) for t in open("/app/rhs.txt").read().split()]
x, _ = conjugate_gradient(lambda v: [sum(a * v[j] for j, a in r.items()) for r in rows], b, tol=1e-13)
open("/app/solution.txt", "w").write("".join(f"{v:.17g}\n" for v in x))
EOF
