#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/scan.py <<'EOF'
import argparse
import asyncio
import sys


def parse_ports(spec):
    ports = set()
    for part in spec.split(","):
        bounds = part.split("-")
        if len(bounds) not in (1, 2) or not all(b.isdigit() for b in bounds):
            raise ValueError(f"bad port spec {part!r}")
        lo, hi = int(bounds[0]), int(bounds[-1])
        if not (1 <= lo <= hi <= 65535):
            raise ValueError(f"bad port range {part!r}")
        ports.update(range(lo, hi + 1))
    return sorted(ports)


async def is_open(host, port, timeout, gate):
    async with gate:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, asyncio.TimeoutError):
            return False
        writer.close()
        return True


async def scan(host, ports, timeout):
    gate = asyncio.Semaphore(256)
    results = await asyncio.gather(*(is_open(host, p, timeout, gate) for p in ports))
    return [p for p, ok in zip(ports, results) if ok]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("ports")
    ap.add_argument("--timeout", type=float, default=0.5)
    args = ap.parse_args()
    try:
        ports = parse_ports(args.ports)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    for p in asyncio.run(scan(args.host, ports, args.timeout)):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
EOF
