#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/ledger/core.py <<'EOF'
"""Reconcile bank statements with the shop's order book.

Amounts are strings with two decimals (e.g. "19.99", "-5.00"): money must be exact, never
binary floating point. Timestamps are ISO 8601 with an offset (e.g. 2024-03-31T23:30:00-02:00);
a transaction belongs to the UTC calendar day of its instant.
"""
import csv
import json
from datetime import datetime, timezone
from decimal import Decimal


def load_bank(path):
    """Rows of the bank CSV (id, timestamp, amount, kind) as dicts with `amount` converted.
    The same transaction id can appear in several exports: keep the first occurrence only.
    `kind` is "payment" or "refund"; refunds are stored as positive amounts in the CSV but
    count as negative money."""
    rows, seen = [], set()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            row["amount"] = Decimal(row["amount"])
            rows.append(row)
    return rows


def day_of(timestamp):
    """UTC date (YYYY-MM-DD) of an ISO 8601 timestamp with offset."""
    return datetime.fromisoformat(timestamp).astimezone(timezone.utc).strftime("%Y-%m-%d")


def daily_totals(rows):
    """{day: net amount as a string with two decimals}, payments minus refunds."""
    totals = {}
    for row in rows:
        day = day_of(row["timestamp"])
        sign = -1 if row["kind"] == "refund" else 1
        totals[day] = totals.get(day, Decimal("0")) + sign * row["amount"]
    return {day: f"{v.quantize(Decimal('0.01'))}" for day, v in totals.items()}


def reconcile(bank_rows, orders_path):
    """Compare with the order book (JSON list of {"order_id", "txn_id", "amount"}).
    Returns {"matched": [...], "missing_in_bank": [...], "amount_mismatch": [...]}: order ids,
    each list sorted. An order matches when a bank *payment* with its txn_id exists and the
    amounts are equal; if the payment exists with another amount it is a mismatch; otherwise
    it is missing in the bank."""
    orders = json.load(open(orders_path))
    by_txn = {r["id"]: r for r in bank_rows if r["kind"] == "payment"}
    out = {"matched": [], "missing_in_bank": [], "amount_mismatch": []}
    for order in orders:
        row = by_txn.get(order["txn_id"])
        if row is None:
            out["missing_in_bank"].append(order["order_id"])
        elif row["amount"] == Decimal(order["amount"]):
            out["matched"].append(order["order_id"])
        else:
            out["amount_mismatch"].append(order["order_id"])
    return {k: sorted(v) for k, v in out.items()}
EOF
python3 - <<'EOF'
import json, sys
sys.path.insert(0, "/app")
from ledger import core
rows = core.load_bank("/app/data/bank.csv")
json.dump({"daily": core.daily_totals(rows), "reconcile": core.reconcile(rows, "/app/data/orders.json")},
          open("/app/report.json", "w"), indent=2)
EOF
