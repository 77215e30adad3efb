#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import csv, json, statistics
groups = {}
for row in csv.DictReader(open("/app/weather.csv")):
    g = groups.setdefault(row["city"], {"n": 0, "t": [], "h": []})
    g["n"] += 1
    if row["temp_c"].strip():
        g["t"].append(float(row["temp_c"]))
    if row["humidity"].strip() not in ("", "n/a"):
        g["h"].append(float(row["humidity"]))
out = {c: {"readings": g["n"], "mean_temp": round(statistics.fmean(g["t"]), 2), "max_temp": max(g["t"]),
           "median_humidity": statistics.median(g["h"])} for c, g in sorted(groups.items())}
json.dump(out, open("/app/summary.json", "w"), indent=2)
EOF
