import ipaddress
import json
from itertools import combinations


def parse():
    valid, invalid = {}, []
    for line in open("/app/networks.txt"):
        if not line.strip():
            continue
        name, cidr = line.split()
        try:
            valid[name] = ipaddress.ip_network(cidr)
        except ValueError:
            invalid.append(name)
    return valid, sorted(invalid)


def lines(path):
    return [l for l in open(path).read().splitlines() if l.strip()]


def test_invalid():
    assert lines("/app/invalid.txt") == parse()[1] == ["lab-typo", "v6-bad"]


def test_overlaps():
    valid, _ = parse()
    pairs = sorted(" ".join(sorted((a, b))) for a, b in combinations(valid, 2)
                   if valid[a].version == valid[b].version and valid[a].overlaps(valid[b]))
    assert lines("/app/overlaps.txt") == pairs


def test_summary():
    valid, invalid = parse()
    v4 = ipaddress.collapse_addresses(n for n in valid.values() if n.version == 4)
    expected = {"valid": len(valid), "invalid": len(invalid), "ipv4_addresses": sum(n.num_addresses for n in v4)}
    assert json.load(open("/app/summary.json")) == expected
