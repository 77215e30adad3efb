#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
from pathlib import Path
p = Path("/app/odesolve.py")
s = p.read_text()
impl = '''def rk4(f, t0, y0, t1, steps):
    if not isinstance(steps, int) or steps <= 0:
        raise ValueError("steps must be a positive integer")
    h = (t1 - t0) / steps
    t, y = t0, list(y0)
    for _ in range(steps):
        k1 = f(t, y)
        k2 = f(t + h / 2, [a + h / 2 * b for a, b in zip(y, k1)])
        k3 = f(t + h / 2, [a + h / 2 * b for a, b in zip(y, k2)])
        k4 = f(t + h, [a + h * b for a, b in zip(y, k3)])
        y = [a + h / 6 * (p + 2 * q + 2 * r + s) for a, p, q, r, s in zip(y, k1, k2, k3, k4)]
        t = t0 + h * (_ + 1)
    return y
'''
start = s.index("def rk4(")
p.write_text(s[:start] + impl)
EOF
python3 -c "import sys; sys.path.insert(0, '/app'); import odesolve; print(f\"{odesolve.rk4(lambda t, y: [-0.8 * y[0]], 0.0, [3.0], 5.0, 50)[0]:.10f}\")" > /app/decay.txt
