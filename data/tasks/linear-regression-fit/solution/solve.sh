#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import csv, json, math, statistics
xs, ys = [], []
for row in csv.DictReader(open("/app/measurements.csv")):
    if not row.get("time_s"):
        continue
    y = float(row["temperature_c"])
    if not math.isnan(y):
        xs.append(float(row["time_s"])); ys.append(y)
fit = statistics.linear_regression(xs, ys)
r = statistics.correlation(xs, ys)
json.dump({"slope": fit.slope, "intercept": fit.intercept, "r_squared": r * r, "n": len(xs)},
          open("/app/fit.json", "w"), indent=2)
EOF
