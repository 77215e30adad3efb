"""Families over data files: log analysis with planted answers, CSV -> JSON transformation.

Both generate the data here, compute the expected answers here (with the same rules the
instruction states), and make the planted answers unambiguous (unique maxima, no ties in
sort keys). Difficulty adds questions, data volume and noise (malformed lines, gzip
rotation, dirty fields, duplicates).
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, heredoc, pick, pytest_module
from tbrl_lib.tasks.model import Difficulty

# --------------------------------------------------------------------------- log analysis

LOG_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\dT(\d\d):\d\d:\d\dZ) (\d+\.\d+\.\d+\.\d+) (GET|POST|PUT|DELETE) (\S+) "
    r"(\d{3}) (\d+)ms$"
)
QUESTIONS = {
    "top_ip": "the client IP address with the most requests (string)",
    "server_errors": "the number of requests answered with a 5xx status (integer)",
    "busiest_hour": 'the hour of day (two digits, e.g. "07") with the most requests (string)',
    "slowest_path": "the request path with the highest mean latency (string)",
    "distinct_404_ips": "how many distinct client IPs received at least one 404 (integer)",
}

LOG_SOLVER = r"""
import glob, gzip, json, re
from collections import Counter, defaultdict
pat = re.compile(r"^(\d{4}-\d\d-\d\dT(\d\d):\d\d:\d\dZ) (\d+\.\d+\.\d+\.\d+) (GET|POST|PUT|DELETE) (\S+) (\d{3}) (\d+)ms$")
rows = []
for path in sorted(glob.glob("/app/logs/*")):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        for line in fh:
            m = pat.match(line.rstrip("\n"))
            if m:
                rows.append(m.groups())
ips = Counter(r[2] for r in rows)
hours = Counter(r[1] for r in rows)
lat = defaultdict(list)
for r in rows:
    lat[r[4]].append(int(r[6]))
answers = {
    "top_ip": ips.most_common(1)[0][0],
    "server_errors": sum(r[5].startswith("5") for r in rows),
    "busiest_hour": hours.most_common(1)[0][0],
    "slowest_path": max(lat, key=lambda p: sum(lat[p]) / len(lat[p])),
    "distinct_404_ips": len({r[2] for r in rows if r[5] == "404"}),
}
keys = json.load(open("/app/QUESTIONS.json"))
json.dump({k: answers[k] for k in keys}, open("/app/report.json", "w"), indent=2)
"""


def _log_answers(rows: list[tuple]) -> dict:
    ips = Counter(r[2] for r in rows)
    hours = Counter(r[1] for r in rows)
    lat: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        lat[r[4]].append(int(r[6]))
    means = {p: sum(v) / len(v) for p, v in lat.items()}
    return {
        "top_ip": ips.most_common(1)[0][0],
        "server_errors": sum(r[5].startswith("5") for r in rows),
        "busiest_hour": hours.most_common(1)[0][0],
        "slowest_path": max(means, key=means.get),
        "distinct_404_ips": len({r[2] for r in rows if r[5] == "404"}),
        "_margins": (_margin(ips), _margin(hours), _margin(means)),
    }


def _margin(counter: dict) -> float:
    top = sorted(counter.values(), reverse=True) + [0, 0]
    return top[0] - top[1]


def log_analysis(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    n_lines = [150, 500, 1200, 2500][level]
    n_files = [1, 2, 3, 4][level]
    ips = [
        f"10.{rng.randint(0, 9)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        for _ in range(8 + 6 * level)
    ]
    paths = [f"/api/{w}" for w in pick(rng, WORDS, 6 + 2 * level)] + ["/", "/login"]
    slow_path = rng.choice(paths)
    day = rng.randint(1, 27)
    lines: list[str] = []
    for _ in range(n_lines):
        ip = rng.choice(ips[:3]) if rng.random() < 0.15 else rng.choice(ips)
        path = rng.choice(paths)
        status = rng.choices(
            ["200", "201", "301", "404", "500", "502", "503"], [60, 8, 6, 12, 5, 3, 2]
        )[0]
        latency = rng.randint(5, 400) + (250 if path == slow_path else 0)
        hour = rng.choices(range(24), [1 + (h in (9, 10, 14, 15)) * 2 for h in range(24)])[0]
        stamp = f"2024-03-{day:02d}T{hour:02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
        lines.append(
            f"{stamp} {ip} {rng.choice(['GET', 'GET', 'POST', 'PUT', 'DELETE'])} "
            f"{path} {status} {latency}ms"
        )
    rows = [LOG_LINE.match(line).groups() for line in lines]
    answers = _log_answers(rows)
    while min(answers.pop("_margins")) < 1:  # plant extra lines until every maximum is unique
        stamp = f"2024-03-{day:02d}T{answers['busiest_hour']}:00:00Z"
        extra = f"{stamp} {answers['top_ip']} GET {answers['slowest_path']} 200 900ms"
        lines.append(extra)
        rows.append(LOG_LINE.match(extra).groups())
        answers = _log_answers(rows)
    noise = ["logrotate: reopened log file", "WARN upstream timeout, retrying", "", "-- MARK --"]
    if level >= 1:
        for _ in range(20 * level):
            broken = rng.choice(lines)[: rng.randint(10, 40)]
            lines.insert(rng.randrange(len(lines)), rng.choice(noise + [broken]))
    chunks = [lines[i::n_files] for i in range(n_files)]
    files = {
        f"logs/access.log{'.' + str(i) if i else ''}": "\n".join(c) + "\n"
        for i, c in enumerate(chunks)
    }
    build = ["RUN gzip -n /app/logs/access.log.2"] if n_files >= 3 else []
    keys = sorted(pick(rng, list(QUESTIONS), 2 + level))
    answers = {k: answers[k] for k in keys}
    files["QUESTIONS.json"] = __import__("json").dumps(keys) + "\n"
    asked = "\n".join(f"- `{k}`: {QUESTIONS[k]}" for k in keys)
    noise_note = (
        "Some lines are not requests (rotation notices, truncated writes); ignore "
        "every line that does not match the format. "
        if level >= 1
        else ""
    )
    gz_note = "Rotated logs may be gzip-compressed. " if n_files >= 3 else ""
    instruction = f"""
The web server's access logs are in `/app/logs/` ({n_files} file(s)). Each request line looks like
`2024-03-05T14:03:59Z 10.1.2.3 GET /api/items 200 37ms` (timestamp, client IP, method, path,
status, latency). {noise_note}{gz_note}Consider all files together.

Write `/app/report.json`, a JSON object with exactly these keys (also listed in
`/app/QUESTIONS.json`):
{asked}
"""
    body = """
    def load():
        return json.loads(Path("/app/report.json").read_text())

    def test_report_has_the_keys():
        assert sorted(load()) == sorted(EXPECTED)
    """
    weights = {"test_report_has_the_keys": 1.0}
    for k in keys:
        body += f'''
    def test_{k}():
        assert load()["{k}"] == EXPECTED["{k}"]
    '''
        weights[f"test_{k}"] = 2.0
    return Draft(
        title=f"Answer {len(keys)} questions from web access logs",
        instruction=instruction,
        app_files=files,
        build_steps=build,
        tests=pytest_module({"EXPECTED": answers}, body),
        weights=weights,
        solution=heredoc("/tmp/solve.py", LOG_SOLVER) + "python3 /tmp/solve.py\n",
        tags=["logs", "parsing"],
        answers=answers,
    )


# ------------------------------------------------------------------------ data transform

TRANSFORM_SOLVER = r"""
import csv, json
spec = json.load(open("/app/spec.json"))
seen, groups = set(), {}
for row in csv.DictReader(open("/app/data/orders.csv", newline="")):
    row = {k.strip(): (v or "").strip() for k, v in row.items()}
    if row["order_id"] in seen:
        continue
    seen.add(row["order_id"])
    if not row["quantity"] or row["status"].lower() != spec["status"]:
        continue
    if spec.get("month") and not row["date"].startswith(spec["month"]):
        continue
    key = row[spec["group_by"]].title()
    qty, price = int(row["quantity"]), float(row["unit_price"])
    value = {"revenue": qty * price, "quantity": qty, "orders": 1}[spec["metric"]]
    groups[key] = groups.get(key, 0) + value
out = [{spec["group_by"]: k, spec["metric"]: round(v, 2)} for k, v in groups.items()]
out.sort(key=lambda r: (-r[spec["metric"]], r[spec["group_by"]]))
json.dump(out, open("/app/out/summary.json", "w"), indent=2)
"""

REGIONS = ["north", "south", "east", "west", "central", "coastal"]
PRODUCTS = ["widget", "gadget", "sprocket", "gizmo", "doohickey", "flange", "bracket"]


def data_transform(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    group_by = rng.choice(["region", "product"])
    metric = rng.choice(["revenue", "quantity", "orders"])
    status = rng.choice(["shipped", "delivered"])
    month = f"2024-{rng.randint(1, 6):02d}" if level >= 1 else None
    dirty = level >= 2
    rows, expected = _orders(rng, 60 + 120 * level, group_by, metric, status, month, dirty)
    spec = {"group_by": group_by, "metric": metric, "status": status, "month": month}
    header = "order_id,date,region,product,quantity,unit_price,status"
    csv_text = header + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    what = {
        "revenue": "total revenue (quantity x unit_price, rounded to 2 decimals)",
        "quantity": "total quantity",
        "orders": "number of orders",
    }[metric]
    rules = [f"keep only orders whose status is `{status}`"]
    if month:
        rules.append(f"keep only orders dated in {month} (YYYY-MM)")
    if dirty:
        rules += [
            "fields may carry stray spaces and mixed case: trim them, compare status "
            "case-insensitively, and write group names in Title Case",
            "an order_id may appear more than once: keep only its first row",
            "skip rows with an empty quantity",
        ]
    else:
        rules.append("write group names in Title Case")
    instruction = (
        f"""
`/app/data/orders.csv` holds order records. Produce `/app/out/summary.json`: a JSON list with
one object per {group_by}, each `{{"{group_by}": <name>, "{metric}": <value>}}`, where the value
is the {what} for that {group_by}. Rules:
"""
        + "\n".join(f"- {r}" for r in rules)
        + f"""
- sort by {metric} descending, ties by {group_by} ascending.

The same parameters are in `/app/spec.json`. Create `/app/out/` if needed.
"""
    )
    body = f'''
    def load():
        return json.loads(Path("/app/out/summary.json").read_text())

    def test_groups():
        assert sorted(r["{group_by}"] for r in load()) == sorted(r["{group_by}"] for r in EXPECTED)

    def test_values():
        got = {{r["{group_by}"]: r["{metric}"] for r in load()}}
        for row in EXPECTED:
            assert abs(got[row["{group_by}"]] - row["{metric}"]) < 0.011, row

    def test_order():
        assert [r["{group_by}"] for r in load()] == [r["{group_by}"] for r in EXPECTED]
    '''
    return Draft(
        title=f"Summarise orders by {group_by} ({metric})",
        instruction=instruction,
        app_files={"data/orders.csv": csv_text, "spec.json": __import__("json").dumps(spec) + "\n"},
        tests=pytest_module({"EXPECTED": expected}, body),
        weights={"test_groups": 1.0, "test_values": 2.0, "test_order": 1.0},
        solution="mkdir -p /app/out\n"
        + heredoc("/tmp/solve.py", TRANSFORM_SOLVER)
        + "python3 /tmp/solve.py\n",
        tags=["csv", "json", "data-processing"],
        answers={"summary": expected},
    )


def _orders(rng, n, group_by, metric, status, month, dirty):
    """Rows as lists of strings, and the expected summary computed from the clean values."""
    rows, groups, seen = [], defaultdict(float), set()
    regions, products = pick(rng, REGIONS, 4), pick(rng, PRODUCTS, 5)
    for i in range(n):
        oid = f"A{1000 + i}"
        if dirty and seen and rng.random() < 0.06:
            oid = rng.choice(sorted(seen))  # a duplicate: ignored by the rules
        date = f"2024-{rng.randint(1, 6):02d}-{rng.randint(1, 28):02d}"
        region, product = rng.choice(regions), rng.choice(products)
        qty = str(rng.randint(1, 20))
        price = f"{rng.randint(100, 9999) / 100:.2f}"
        st = rng.choice([status, status, "pending", "cancelled"])
        if dirty and rng.random() < 0.05:
            qty = ""
        cells = [oid, date, region, product, qty, price, st]
        if dirty:
            cells[2] = rng.choice([region, region.upper(), f" {region.title()} "])
            cells[6] = rng.choice([st, st.upper(), f" {st}"])
        rows.append(cells)
        if oid in seen:
            continue
        seen.add(oid)
        if not qty or st != status or (month and not date.startswith(month)):
            continue
        key = {"region": region, "product": product}[group_by].title()
        groups[key] += {"revenue": int(qty) * float(price), "quantity": int(qty), "orders": 1}[
            metric
        ]
    out = [{group_by: k, metric: round(v, 2)} for k, v in groups.items()]
    out.sort(key=lambda r: (-r[metric], r[group_by]))
    return rows, out
