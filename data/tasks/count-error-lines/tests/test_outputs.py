import json
import re
from collections import Counter
from pathlib import Path

LOG = Path("/app/logs/app.log")


def expected():
    counts = Counter()
    for line in LOG.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "ERROR":
            counts[parts[2].strip("[]")] += 1
    return counts


def test_error_count_exact():
    text = Path("/app/error_count.txt").read_text().strip()
    assert re.fullmatch(r"\d+", text), f"not an integer: {text!r}"
    assert int(text) == sum(expected().values())


def test_component_counts():
    data = json.loads(Path("/app/error_components.json").read_text())
    assert data == dict(expected())


def test_log_untouched():
    assert len(LOG.read_text().splitlines()) == 400
    assert Path("/app/error_components.json").exists()
