import csv
import sqlite3


def expected():
    con = sqlite3.connect("/app/shop.db")
    rows = con.execute(
        "SELECT c.name, SUM(o.amount_cents) s FROM orders o JOIN customers c ON c.id = o.customer_id "
        "WHERE o.status = 'paid' GROUP BY c.id ORDER BY s DESC LIMIT 3").fetchall()
    return [[n, f"{s / 100:.2f}"] for n, s in rows]


def read():
    with open("/app/top_customers.csv", newline="") as f:
        return list(csv.reader(f))


def test_header():
    assert read()[0] == ["name", "total"]


def test_top_three_names_in_order():
    assert [r[0] for r in read()[1:]] == [e[0] for e in expected()]


def test_totals_exact():
    assert read()[1:] == expected()
