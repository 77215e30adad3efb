#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/inventory/store.py <<'EOF'
"""A tiny stock store. Quantities are integers; prices are in cents."""


class InsufficientStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self._items = {}

    def add(self, sku, qty):
        """Add qty (a positive int) units of sku. qty <= 0 raises ValueError."""
        if not isinstance(qty, int) or qty <= 0:
            raise ValueError(f"qty must be a positive int, got {qty!r}")
        self._items[sku] = self._items.get(sku, 0) + qty

    def remove(self, sku, qty):
        """Remove qty units; raises InsufficientStock if fewer are in stock.
        A sku whose quantity reaches 0 is forgotten entirely."""
        have = self._items.get(sku, 0)
        if qty > have:
            raise InsufficientStock(f"{sku}: have {have}, need {qty}")
        if qty == have:
            self._items.pop(sku, None)
        else:
            self._items[sku] = have - qty

    def quantity(self, sku):
        return self._items.get(sku, 0)

    def skus(self):
        """All skus in stock, sorted."""
        return sorted(self._items)

    def low_stock(self, threshold):
        """Skus with quantity strictly below threshold, sorted."""
        return sorted(s for s, q in self._items.items() if q < threshold)

    def total_value(self, prices):
        """Sum of quantity * price over skus in stock; a sku without a price raises KeyError."""
        return sum(q * prices[s] for s, q in self._items.items())
EOF
