import sys

import pytest

sys.path.insert(0, "/app")
from ttlcache import TTLCache  # noqa: E402


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_validation():
    for cap, ttl in [(0, 1), (1, 0), (-1, 5), (2, -1)]:
        with pytest.raises(ValueError):
            TTLCache(cap, ttl)


def test_lru_eviction_respects_gets():
    c = TTLCache(2, 100, clock=Clock())
    c.set("a", 1)
    c.set("b", 2)
    assert c.get("a") == 1
    c.set("c", 3)
    assert "b" not in c and c.get("a") == 1 and c.get("c") == 3
    assert c.stats()["evictions"] == 1


def test_contains_does_not_touch_recency():
    c = TTLCache(2, 100, clock=Clock())
    c.set("a", 1)
    c.set("b", 2)
    assert "a" in c
    c.set("c", 3)
    assert "a" not in c and "b" in c


def test_expiry_boundary_and_stats():
    clock = Clock()
    c = TTLCache(3, 10, clock=clock)
    c.set("a", 1)
    clock.now += 9.999
    assert c.get("a") == 1
    clock.now += 0.001
    assert c.get("a", "gone") == "gone"
    assert len(c) == 0
    assert c.stats() == {"hits": 1, "misses": 1, "evictions": 0, "expirations": 1}


def test_expired_purged_before_eviction():
    clock = Clock()
    c = TTLCache(2, 10, clock=clock)
    c.set("old", 1)
    clock.now += 5
    c.set("fresh", 2)
    clock.now += 6
    c.set("new", 3)
    assert c.get("fresh") == 2 and c.get("new") == 3
    s = c.stats()
    assert s["evictions"] == 0 and s["expirations"] == 1


def test_reset_on_set_and_delete():
    clock = Clock()
    c = TTLCache(2, 10, clock=clock)
    c.set("a", 1)
    clock.now += 8
    c.set("a", 2)
    clock.now += 8
    assert c.get("a") == 2
    assert c.delete("a") is True and c.delete("a") is False
    c.set("b", 1)
    clock.now += 10
    assert c.delete("b") is False and len(c) == 0
