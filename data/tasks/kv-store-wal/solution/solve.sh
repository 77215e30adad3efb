#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/kv.py <<'EOF'
import json
import os
import sys
import zlib


class Corrupt(Exception):
    pass


def encode(rec):
    body = json.dumps(rec, ensure_ascii=False).encode()
    return f"{zlib.crc32(body):08x}\t".encode() + body + b"\n"


def decode(line):
    try:
        crc, body = line.split(b"\t", 1)
        if crc.decode() != f"{zlib.crc32(body):08x}":
            return None
        rec = json.loads(body)
        return rec if isinstance(rec, dict) and rec.get("op") in ("set", "del") else None
    except (ValueError, UnicodeDecodeError):
        return None


def load(path):
    """(state, length of the valid prefix in bytes)."""
    data = open(path, "rb").read() if os.path.exists(path) else b""
    state, pos, lines = {}, 0, data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    for i, line in enumerate(complete):
        rec = decode(line)
        if rec is None:
            if i == len(complete) - 1 and not tail:
                break
            raise Corrupt(f"corrupt record at line {i + 1}")
        if rec["op"] == "set":
            state[rec["key"]] = rec["value"]
        else:
            state.pop(rec["key"], None)
        pos += len(line) + 1
    return state, pos


def append(path, valid_len, rec):
    with open(path, "ab") as f:
        f.truncate(valid_len)
    with open(path, "ab") as f:
        f.write(encode(rec))
        f.flush()
        os.fsync(f.fileno())


def main(argv):
    d, cmd, args = argv[0], argv[1], argv[2:]
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "wal.log")
    try:
        state, valid = load(path)
    except Corrupt as err:
        print(f"{path}: {err}", file=sys.stderr)
        return 3
    if cmd == "get":
        if args[0] not in state:
            return 1
        print(state[args[0]])
    elif cmd == "set":
        append(path, valid, {"op": "set", "key": args[0], "value": args[1]})
    elif cmd == "delete":
        if args[0] not in state:
            return 1
        append(path, valid, {"op": "del", "key": args[0]})
    elif cmd == "list":
        for k in sorted(state):
            print(f"{k}={state[k]}")
    elif cmd == "compact":
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            for k in sorted(state):
                f.write(encode({"op": "set", "key": k, "value": state[k]}))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    else:
        print(f"unknown command {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
EOF
