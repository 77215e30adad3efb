import pytest
from inventory import Inventory, InsufficientStock


def test_add_and_quantity():
    inv = Inventory()
    inv.add("a", 3)
    inv.add("a", 2)
    assert inv.quantity("a") == 5


def test_remove_too_many():
    inv = Inventory()
    inv.add("a", 2)
    with pytest.raises(InsufficientStock):
        inv.remove("a", 3)
