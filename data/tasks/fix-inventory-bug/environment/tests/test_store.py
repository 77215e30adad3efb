import unittest

from inventory import InsufficientStock, Inventory


class StoreTest(unittest.TestCase):
    def test_add_and_quantity(self):
        inv = Inventory()
        inv.add("a", 3)
        inv.add("a", 2)
        self.assertEqual(inv.quantity("a"), 5)

    def test_remove_too_many(self):
        inv = Inventory()
        inv.add("a", 2)
        with self.assertRaises(InsufficientStock):
            inv.remove("a", 3)
