#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/heat.py <<'EOF'
import math


def _thomas(a, b, c, d):
    n = len(d)
    cp, dp = [0.0] * n, [0.0] * n
    cp[0], dp[0] = c[0] / b[0], d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m if i < n - 1 else 0.0
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = [0.0] * n
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def solve(alpha, nx, nt, t_end):
    dx, dt = 1.0 / nx, t_end / nt
    r = alpha * dt / dx ** 2
    u = [math.sin(math.pi * i * dx) + 0.5 * math.sin(3 * math.pi * i * dx) for i in range(nx + 1)]
    u[0] = u[-1] = 0.0
    m = nx - 1
    a = [-r / 2] * m
    b = [1 + r] * m
    c = [-r / 2] * m
    for _ in range(nt):
        rhs = [(1 - r) * u[i] + r / 2 * (u[i - 1] + u[i + 1]) for i in range(1, nx)]
        u = [0.0] + _thomas(a, b, c, rhs) + [0.0]
    return u
EOF
python3 - <<'EOF'
import sys
sys.path.insert(0, "/app")
import heat
u = heat.solve(1.0, 50, 100, 0.1)
with open("/app/heat_profile.csv", "w") as f:
    f.write("x,u\n")
    for i, v in enumerate(u):
        f.write(f"{i / 50:.6f},{v:.12g}\n")
EOF
