import csv
import json
from pathlib import Path


def rows():
    with open("/app/active_users.csv", newline="") as f:
        return list(csv.reader(f))


def expected():
    users = json.loads(Path("/app/users.json").read_text())
    return [[str(u["id"]), u["name"], u["email"]] for u in sorted(users, key=lambda u: u["id"]) if u["active"]]


def test_header():
    assert rows()[0] == ["id", "name", "email"]


def test_only_active_sorted():
    assert [r[0] for r in rows()[1:]] == [e[0] for e in expected()]


def test_values_roundtrip():
    assert rows()[1:] == expected()
