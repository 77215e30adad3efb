#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/resolve.py <<'EOF'
import json
import operator
import sys

OPS = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def parse_version(text):
    return tuple(int(p) for p in text.strip().split("."))


def satisfies(version, constraint):
    if constraint.strip() == "*":
        return True
    v = parse_version(version)
    for clause in constraint.split(","):
        clause = clause.strip()
        op = next(o for o in (">=", "<=", "==", "!=", ">", "<") if clause.startswith(o))
        if not OPS[op](v, parse_version(clause[len(op):])):
            return False
    return True


def solve(index, reqs, assigned):
    required = set(reqs)
    for name, version in assigned.items():
        required |= set(index[name][version])
    pending = sorted(required - set(assigned))
    if not pending:
        return dict(assigned)
    name = pending[0]
    constraints = [reqs[name]] if name in reqs else []
    constraints += [index[n][v][name] for n, v in assigned.items() if name in index[n][v]]
    for version in sorted(index.get(name, {}), key=parse_version, reverse=True):
        if not all(satisfies(version, c) for c in constraints):
            continue
        deps = index[name][version]
        if not all(satisfies(assigned[d], c) for d, c in deps.items() if d in assigned):
            continue
        assigned[name] = version
        result = solve(index, reqs, assigned)
        if result is not None:
            return result
        del assigned[name]
    return None


def main(index_path, req_path):
    index, reqs = json.load(open(index_path)), json.load(open(req_path))
    for name in reqs:
        if name not in index:
            print(f"unknown package in requirements: {name}", file=sys.stderr)
            return 2
    result = solve(index, reqs, {})
    if result is None:
        print("version conflict: no assignment satisfies all constraints", file=sys.stderr)
        return 1
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
EOF
python3 /app/resolve.py /app/index.json /app/requirements.json > /app/lock.json
