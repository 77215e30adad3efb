#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/ttlcache.py <<'EOF'
import time
from collections import OrderedDict


class TTLCache:
    def __init__(self, capacity, ttl, clock=time.monotonic):
        if capacity < 1 or ttl <= 0:
            raise ValueError("capacity must be >= 1 and ttl > 0")
        self.capacity, self.ttl, self.clock = capacity, ttl, clock
        self._data = OrderedDict()
        self._stats = {"hits": 0, "misses": 0, "evictions": 0, "expirations": 0}

    def _expired(self, key):
        return self.clock() >= self._data[key][1]

    def _drop_if_expired(self, key):
        if key in self._data and self._expired(key):
            del self._data[key]
            self._stats["expirations"] += 1
            return True
        return False

    def set(self, key, value):
        if key in self._data:
            self._data.move_to_end(key)
        elif len(self._data) >= self.capacity:
            for k in list(self._data):
                self._drop_if_expired(k)
            if len(self._data) >= self.capacity:
                self._data.popitem(last=False)
                self._stats["evictions"] += 1
        self._data[key] = (value, self.clock() + self.ttl)

    def get(self, key, default=None):
        if key not in self._data or self._drop_if_expired(key):
            self._stats["misses"] += 1
            return default
        self._data.move_to_end(key)
        self._stats["hits"] += 1
        return self._data[key][0]

    def delete(self, key):
        if key not in self._data or self._drop_if_expired(key):
            return False
        del self._data[key]
        return True

    def __contains__(self, key):
        return key in self._data and not self._expired(key)

    def __len__(self):
        return sum(1 for k in self._data if not self._expired(k))

    def stats(self):
        return dict(self._stats)
EOF
