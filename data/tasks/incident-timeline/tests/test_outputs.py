import csv
import json
import re
from datetime import datetime, timezone

GW = re.compile(r"^(\S+) req=(\w+) event=(start|end)(?: status=(\d+))?")
LG = re.compile(r"^(\w{3}) +(\d{1,2}) (\d\d:\d\d:\d\d) \S+ \S+: request (\w+) (started|finished)(?: status=(\d+))?")


def events():
    out = []
    for i, line in enumerate(open("/app/logs/gateway.log").read().splitlines()):
        m = GW.match(line)
        if m:
            ts = datetime.fromisoformat(m.group(1)).astimezone(timezone.utc)
            out.append((ts, "gateway", i, m.group(2), m.group(3), int(m.group(4)) if m.group(4) else None))
    for i, line in enumerate(open("/app/logs/worker.jsonl").read().splitlines()):
        if line.strip():
            r = json.loads(line)
            ts = datetime.fromtimestamp(r["ts"] / 1000, timezone.utc)
            out.append((ts, "worker", i, r["request"], r["event"], r.get("status")))
    for i, line in enumerate(open("/app/logs/legacy.log").read().splitlines()):
        m = LG.match(line)
        if m:
            ts = datetime.strptime(f"2024 {m.group(1)} {m.group(2)} {m.group(3)}", "%Y %b %d %H:%M:%S").replace(tzinfo=timezone.utc)
            ev = "end" if m.group(5) == "finished" else "start"
            out.append((ts, "legacy", i, m.group(4), ev, int(m.group(6)) if m.group(6) else None))
    out.sort(key=lambda e: (e[0], e[1], e[2]))
    return out


def iso(ts):
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def requests():
    reqs = {}
    for ts, src, _, rid, ev, status in events():
        r = reqs.setdefault(rid, {"first": ts, "last": ts, "sources": set(), "status": None, "complete": False})
        r["last"] = ts
        r["sources"].add(src)
        if status is not None:
            r["status"] = status
        if ev == "end":
            r["complete"] = True
    return {rid: {"first_seen": iso(r["first"]), "last_seen": iso(r["last"]),
                  "duration_ms": int((r["last"] - r["first"]).total_seconds() * 1000),
                  "sources": sorted(r["sources"]), "status": r["status"], "complete": r["complete"]}
            for rid, r in reqs.items()}


def test_timeline_rows():
    rows = list(csv.reader(open("/app/timeline.csv", newline="")))
    assert rows[0] == ["utc_time", "source", "request", "event"]
    want = [[iso(ts), src, rid, ev] for ts, src, _, rid, ev, _ in events()]
    assert len(rows) - 1 == len(want)
    assert rows[1:] == want


def test_request_windows():
    got, want = json.load(open("/app/requests.json")), requests()
    assert sorted(got) == sorted(want)
    for rid, w in want.items():
        assert (got[rid]["first_seen"], got[rid]["last_seen"], got[rid]["duration_ms"]) == \
            (w["first_seen"], w["last_seen"], w["duration_ms"]), rid


def test_request_status_and_sources():
    got, want = json.load(open("/app/requests.json")), requests()
    for rid, w in want.items():
        assert (got[rid]["sources"], got[rid]["status"], got[rid]["complete"]) == \
            (w["sources"], w["status"], w["complete"]), rid


def test_summary():
    want = requests()
    slowest = sorted(want, key=lambda r: (-want[r]["duration_ms"], r))[0]
    assert json.load(open("/app/summary.json")) == {
        "requests": len(want),
        "incomplete": sorted(r for r, v in want.items() if not v["complete"]),
        "failed": sorted(r for r, v in want.items() if (v["status"] or 0) >= 500),
        "slowest": slowest}
