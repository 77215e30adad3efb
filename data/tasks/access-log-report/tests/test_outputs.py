import json
import math
import re
from collections import Counter, defaultdict

LINE = re.compile(r'^(\S+) - - \[(\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} \+0000)\] "(\w+) (\S+) HTTP/1\.1" (\d{3}) (\d+) "[^"]*" "[^"]*" (\d+(?:\.\d+)?)$')


def expected():
    total = bad = 0
    per = defaultdict(list)
    ips = Counter()
    with open("/app/access.log") as f:
        text = f.read()
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        m = LINE.match(line)
        if not m:
            bad += 1
            continue
        total += 1
        ip, _, method, path, status, _, secs = m.groups()
        path = "/".join("{id}" if s.isdigit() else s for s in path.split("?")[0].split("/"))
        per[f"{method} {path}"].append((int(status), float(secs)))
        ips[ip] += 1
    endpoints = {}
    for key, reqs in per.items():
        times = sorted(t for _, t in reqs)
        endpoints[key] = {"count": len(reqs),
                          "error_rate": round(sum(s >= 500 for s, _ in reqs) / len(reqs), 4),
                          "p95_ms": round(times[math.ceil(0.95 * len(times)) - 1] * 1000)}
    top = sorted(ips.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return {"total_requests": total, "malformed_lines": bad, "endpoints": endpoints,
            "top_ips": [list(t) for t in top]}


def report():
    return json.load(open("/app/report.json"))


def test_counts():
    r, e = report(), expected()
    assert (r["total_requests"], r["malformed_lines"]) == (e["total_requests"], e["malformed_lines"])


def test_endpoint_keys_and_counts():
    r, e = report(), expected()
    assert sorted(r["endpoints"]) == sorted(e["endpoints"])
    assert {k: v["count"] for k, v in r["endpoints"].items()} == {k: v["count"] for k, v in e["endpoints"].items()}


def test_error_rates():
    r, e = report(), expected()
    for k, v in e["endpoints"].items():
        assert abs(r["endpoints"][k]["error_rate"] - v["error_rate"]) < 1e-9, k


def test_p95():
    r, e = report(), expected()
    for k, v in e["endpoints"].items():
        assert r["endpoints"][k]["p95_ms"] == v["p95_ms"], k


def test_top_ips():
    assert report()["top_ips"] == expected()["top_ips"]
