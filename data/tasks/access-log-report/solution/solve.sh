#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import json, math, re
from collections import Counter, defaultdict
pat = re.compile(r'^(\S+) - - \[\d{2}/[A-Za-z]{3}/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] "([A-Z]+) (\S+) HTTP/1\.1" (\d{3}) \d+ "[^"]*" "[^"]*" (\d+(?:\.\d+)?)$')
total = bad = 0
per, ips = defaultdict(list), Counter()
for line in open("/app/access.log").read().splitlines():
    m = pat.match(line)
    if not m:
        bad += 1
        continue
    total += 1
    ip, method, path, status, secs = m.groups()
    segs = ["{id}" if s.isdigit() else s for s in path.split("?", 1)[0].split("/")]
    per[f"{method} {'/'.join(segs)}"].append((int(status), float(secs)))
    ips[ip] += 1
endpoints = {}
for key, reqs in sorted(per.items()):
    times = sorted(t for _, t in reqs)
    endpoints[key] = {"count": len(reqs), "error_rate": round(sum(s >= 500 for s, _ in reqs) / len(reqs), 4),
                      "p95_ms": round(times[math.ceil(0.95 * len(times)) - 1] * 1000)}
top = sorted(ips.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
json.dump({"total_requests": total, "malformed_lines": bad, "endpoints": endpoints,
           "top_ips": [[ip, n] for ip, n in top]}, open("/app/report.json", "w"), indent=2)
EOF
