import csv
import glob
import os
from datetime import datetime


def load_expected():
    best = {}
    for path in glob.glob("/app/exports/*.csv"):
        legacy = os.path.basename(path) == "legacy.csv"
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                row = {k.strip().lower(): v for k, v in row.items()}
                email = row["email"].strip().lower()
                fmt = "%d/%m/%Y" if legacy else "%Y-%m-%d"
                date = datetime.strptime(row["updated_at"].strip(), fmt).date()
                if email not in best or date > best[email][1]:
                    best[email] = (row["name"], date)
    return [[e, n, d.isoformat()] for e, (n, d) in sorted(best.items())]


def rows():
    with open("/app/contacts.csv", newline="") as f:
        return list(csv.reader(f))


def test_header_and_count():
    r = rows()
    assert r[0] == ["email", "name", "updated_at"]
    assert len(r) - 1 == len(load_expected())


def test_emails_normalised_sorted():
    assert [x[0] for x in rows()[1:]] == [e[0] for e in load_expected()]


def test_latest_record_kept():
    assert rows()[1:] == load_expected()
