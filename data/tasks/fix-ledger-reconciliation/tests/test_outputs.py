import json
import sys
import tempfile
from decimal import Decimal

sys.path.insert(0, "/app")
from ledger import core  # noqa: E402


def bank(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    f.write("id,timestamp,amount,kind\n" + text)
    f.close()
    return f.name


def test_exact_money():
    rows = core.load_bank(bank("a,2024-01-01T00:00:00+00:00,0.10,payment\nb,2024-01-01T01:00:00+00:00,0.20,payment\n"))
    assert all(isinstance(r["amount"], Decimal) for r in rows)
    assert core.daily_totals(rows) == {"2024-01-01": "0.30"}
    many = "".join(f"x{i},2024-01-02T00:00:00+00:00,0.01,payment\n" for i in range(1000))
    assert core.daily_totals(core.load_bank(bank(many))) == {"2024-01-02": "10.00"}


def test_duplicates_dropped():
    rows = core.load_bank(bank("a,2024-01-01T00:00:00+00:00,1.00,payment\na,2024-01-01T00:00:00+00:00,1.00,payment\n"
                               "b,2024-01-01T00:00:00+00:00,2.00,payment\n"))
    assert [r["id"] for r in rows] == ["a", "b"]


def test_utc_day_boundaries():
    assert core.day_of("2024-03-30T23:30:00-02:00") == "2024-03-31"
    assert core.day_of("2024-03-31T00:30:00+02:00") == "2024-03-30"
    assert core.day_of("2024-03-31T12:00:00+00:00") == "2024-03-31"


def test_refunds_subtract():
    rows = core.load_bank(bank("a,2024-01-01T10:00:00+00:00,5.00,payment\nr,2024-01-01T11:00:00+00:00,1.25,refund\n"))
    assert rows[1]["amount"] == Decimal("1.25") and rows[1]["kind"] == "refund"
    assert core.daily_totals(rows) == {"2024-01-01": "3.75"}


def test_reconcile_rules():
    rows = core.load_bank("/app/data/bank.csv")
    got = core.reconcile(rows, "/app/data/orders.json")
    assert got == {"matched": ["o-1", "o-2", "o-6"], "missing_in_bank": ["o-4", "o-5"], "amount_mismatch": ["o-3"]}


def test_report_file():
    rows = core.load_bank("/app/data/bank.csv")
    report = json.load(open("/app/report.json"))
    assert report["daily"] == {"2024-03-30": "-4.70", "2024-03-31": "23.19"} == core.daily_totals(rows)
    assert report["reconcile"] == core.reconcile(rows, "/app/data/orders.json")
