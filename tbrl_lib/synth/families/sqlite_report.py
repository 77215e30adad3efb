"""Family: answer a question from a SQLite database and write it as a CSV report.

The database is built at image-build time from a generated SQL script (the sqlite3 CLI is
in the base image). The expected report is computed here in Python from the same rows.
Difficulty adds a date window, then refunds that must be subtracted via a join, then a
minimum-order threshold (HAVING).
"""

from __future__ import annotations

import random
from collections import defaultdict

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, pick, pytest_module
from tbrl_lib.synth.families.system import NAMES
from tbrl_lib.tasks.model import Difficulty

CITIES = ["Lisbon", "Oslo", "Quito", "Nairobi", "Hanoi", "Perth", "Lima", "Tallinn"]


def sqlite_report(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    cities = pick(rng, CITIES, 3)
    city, top = rng.choice(cities), rng.randint(3, 5)
    people = [f"{n}_{w}" for n in NAMES for w in pick(rng, WORDS, 2)]
    customers = [
        (i + 1, name, rng.choice(cities))
        for i, name in enumerate(pick(rng, people, 14 + 6 * level))
    ]
    orders, refunds = [], []
    for oid in range(1, 80 + 60 * level):
        cid = rng.choice(customers)[0]
        orders.append(
            (
                oid,
                cid,
                rng.randint(500, 90000),
                f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            )
        )
        if level >= 2 and rng.random() < 0.2:
            refunds.append((oid, rng.randint(100, orders[-1][2])))
    window = sorted(rng.sample(range(1, 13), 2)) if level >= 1 else None
    min_orders = 2 if level >= 3 else None
    expected = _report(customers, orders, refunds, city, top, window, min_orders)
    sql = [
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount_cents INTEGER, placed_on TEXT);",
        "CREATE TABLE refunds (order_id INTEGER, amount_cents INTEGER);",
    ]
    sql += [f"INSERT INTO customers VALUES ({i}, '{n}', '{c}');" for i, n, c in customers]
    sql += [f"INSERT INTO orders VALUES ({o}, {c}, {a}, '{d}');" for o, c, a, d in orders]
    sql += [f"INSERT INTO refunds VALUES ({o}, {a});" for o, a in refunds]
    rules = [f"only customers in {city}"]
    where = [f"c.city = '{city}'"]
    if window:
        lo, hi = f"2024-{window[0]:02d}-01", f"2024-{window[1]:02d}-31"
        rules.append(f"only orders placed from {lo} to {hi} inclusive")
        where.append(f"o.placed_on BETWEEN '{lo}' AND '{hi}'")
    net = "o.amount_cents"
    if level >= 2:
        rules.append(
            "an order's amount is net of its refunds (table `refunds`, possibly several per order)"
        )
        net = "o.amount_cents - COALESCE((SELECT SUM(r.amount_cents) FROM refunds r WHERE r.order_id = o.id), 0)"
    having = ""
    if min_orders:
        rules.append(f"only customers with at least {min_orders} such orders")
        having = f"HAVING COUNT(*) >= {min_orders}"
    query = (
        f"SELECT c.name AS customer, printf('%.2f', SUM({net}) / 100.0) AS total "
        f"FROM orders o JOIN customers c ON c.id = o.customer_id WHERE {' AND '.join(where)} "
        f"GROUP BY c.id {having} ORDER BY SUM({net}) DESC, c.name ASC LIMIT {top};"
    )
    instruction = (
        f"""
The shop database is `/app/shop.db` (SQLite; tables `customers`, `orders`, `refunds`;
amounts in cents). Write `/app/report.csv` listing the top {top} customers by total order
amount, with the header `customer,total` and totals in currency units with exactly two
decimals (e.g. `1234.50`), highest first (ties by name). Rules:
"""
        + "\n".join(f"- {r}" for r in rules)
        + "\n"
    )
    body = """
    import csv

    def rows():
        with open("/app/report.csv", newline="") as fh:
            return list(csv.reader(fh))

    def test_header():
        assert rows()[0] == ["customer", "total"]

    def test_customers():
        assert sorted(r[0] for r in rows()[1:]) == sorted(r[0] for r in EXPECTED)

    def test_totals_and_order():
        assert rows()[1:] == EXPECTED
    """
    return Draft(
        title=f"Top {top} customers in {city} from a SQLite database",
        instruction=instruction,
        app_files={".setup/shop.sql": "\n".join(sql) + "\n"},
        build_steps=["RUN sqlite3 /app/shop.db < /app/.setup/shop.sql && rm -rf /app/.setup"],
        tests=pytest_module({"EXPECTED": expected}, body),
        weights={"test_header": 0.5, "test_customers": 1.5, "test_totals_and_order": 2.0},
        solution=f'sqlite3 -header -csv /app/shop.db "{query}" > /app/report.csv\n',
        tags=["sql", "sqlite", "csv"],
        answers={"report": expected},
    )


def _report(customers, orders, refunds, city, top, window, min_orders) -> list[list[str]]:
    refunded: dict[int, int] = defaultdict(int)
    for oid, amount in refunds:
        refunded[oid] += amount
    names = {cid: name for cid, name, c in customers if c == city}
    totals: dict[int, int] = defaultdict(int)
    counts: dict[int, int] = defaultdict(int)
    for oid, cid, amount, day in orders:
        if cid not in names or (window and not window[0] <= int(day[5:7]) <= window[1]):
            continue
        totals[cid] += amount - refunded[oid]
        counts[cid] += 1
    ranked = sorted(
        (cid for cid in totals if not min_orders or counts[cid] >= min_orders),
        key=lambda cid: (-totals[cid], names[cid]),
    )
    return [[names[cid], f"{totals[cid] / 100:.2f}"] for cid in ranked[:top]]
