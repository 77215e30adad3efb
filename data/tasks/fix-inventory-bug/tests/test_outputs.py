import subprocess
import sys

import pytest

sys.path.insert(0, "/app")
from inventory import Inventory, InsufficientStock  # noqa: E402


def test_remove_exact_boundary():
    inv = Inventory()
    inv.add("a", 2)
    with pytest.raises(InsufficientStock):
        inv.remove("a", 3)
    inv.remove("a", 2)
    assert inv.quantity("a") == 0
    assert "a" not in inv.skus()


def test_add_rejects_non_positive():
    inv = Inventory()
    for bad in (0, -1):
        with pytest.raises(ValueError):
            inv.add("a", bad)
    assert inv.skus() == []


def test_low_stock_strict():
    inv = Inventory()
    inv.add("a", 5)
    inv.add("b", 4)
    inv.add("c", 9)
    assert inv.low_stock(5) == ["b"]


def test_total_value_missing_price():
    inv = Inventory()
    inv.add("a", 2)
    inv.add("b", 1)
    assert inv.total_value({"a": 150, "b": 20}) == 320
    with pytest.raises(KeyError):
        inv.total_value({"a": 150})


def test_existing_suite_passes():
    # The package's own suite is unittest's: the image carries no pytest (as the published
    # python image), and the build stays offline.
    r = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "/app/tests"],
                       cwd="/app", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    src = open("/app/tests/test_store.py").read()
    assert "inv.remove(\"a\", 3)" in src
