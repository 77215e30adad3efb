#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import csv, json, re
from datetime import datetime, timezone

def iso(ts):
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"

evs = []
gw = re.compile(r"^(\S+) req=(\w+) event=(start|end)(?: status=(\d+))?")
for i, line in enumerate(open("/app/logs/gateway.log").read().splitlines()):
    m = gw.match(line)
    if m:
        evs.append((datetime.fromisoformat(m[1]).astimezone(timezone.utc), "gateway", i, m[2], m[3],
                    int(m[4]) if m[4] else None))
for i, line in enumerate(open("/app/logs/worker.jsonl").read().splitlines()):
    if line.strip():
        r = json.loads(line)
        evs.append((datetime.fromtimestamp(r["ts"] / 1000, timezone.utc), "worker", i, r["request"], r["event"],
                    r.get("status")))
lg = re.compile(r"^(\w{3}) +(\d{1,2}) (\d\d:\d\d:\d\d) \S+ \S+: request (\w+) (started|finished)(?: status=(\d+))?")
for i, line in enumerate(open("/app/logs/legacy.log").read().splitlines()):
    m = lg.match(line)
    if m:
        ts = datetime.strptime(f"2024 {m[1]} {m[2]} {m[3]}", "%Y %b %d %H:%M:%S").replace(tzinfo=timezone.utc)
        evs.append((ts, "legacy", i, m[4], "end" if m[5] == "finished" else "start", int(m[6]) if m[6] else None))
evs.sort(key=lambda e: (e[0], e[1], e[2]))
with open("/app/timeline.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["utc_time", "source", "request", "event"])
    for ts, src, _, rid, ev, _ in evs:
        w.writerow([iso(ts), src, rid, ev])
reqs = {}
for ts, src, _, rid, ev, status in evs:
    r = reqs.setdefault(rid, {"first": ts, "sources": set(), "status": None, "complete": False})
    r["last"] = ts
    r["sources"].add(src)
    r["status"] = status if status is not None else r["status"]
    r["complete"] = r["complete"] or ev == "end"
out = {rid: {"first_seen": iso(r["first"]), "last_seen": iso(r["last"]),
             "duration_ms": int((r["last"] - r["first"]).total_seconds() * 1000),
             "sources": sorted(r["sources"]), "status": r["status"], "complete": r["complete"]}
       for rid, r in sorted(reqs.items())}
json.dump(out, open("/app/requests.json", "w"), indent=1)
json.dump({"requests": len(out),
           "incomplete": sorted(r for r, v in out.items() if not v["complete"]),
           "failed": sorted(r for r, v in out.items() if (v["status"] or 0) >= 500),
           "slowest": sorted(out, key=lambda r: (-out[r]["duration_ms"], r))[0]},
          open("/app/summary.json", "w"), indent=1)
EOF
