import json

EXPECTED = [
    {"file": "app/settings.py", "line": 3, "kind": "credential"},
    {"file": "config/app.yml", "line": 3, "kind": "credential"},
    {"file": "deploy/.env", "line": 1, "kind": "aws_key"},
    {"file": "deploy/.env", "line": 2, "kind": "credential"},
    {"file": "keys/old_deploy.pem", "line": 1, "kind": "private_key"},
    {"file": "src/client.js", "line": 2, "kind": "aws_key"},
    {"file": "src/client.js", "line": 3, "kind": "credential"},
]


def load():
    return json.load(open("/app/leaks.json"))


def test_true_positives_found():
    got = {(x["file"], x["line"], x["kind"]) for x in load()}
    missing = {(x["file"], x["line"], x["kind"]) for x in EXPECTED} - got
    assert not missing, missing


def test_no_false_positives():
    got = {(x["file"], x["line"], x["kind"]) for x in load()}
    extra = got - {(x["file"], x["line"], x["kind"]) for x in EXPECTED}
    assert not extra, extra


def test_exact_sorted_output():
    assert load() == EXPECTED
