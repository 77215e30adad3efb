#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/runner.py <<'EOF'
import heapq
import json
import os
import subprocess
import sys


def main(argv):
    dry = "--dry-run" in argv
    args = [a for a in argv if a != "--dry-run"]
    taskfile, targets = args[0], args[1:]
    tasks = json.load(open(taskfile))
    needed, stack = set(), list(targets)
    while stack:
        name = stack.pop()
        if name not in tasks:
            print(f"unknown task: {name}", file=sys.stderr)
            return 2
        if name not in needed:
            needed.add(name)
            stack.extend(tasks[name]["deps"])
    indeg = {n: len(set(tasks[n]["deps"])) for n in needed}
    users = {n: [] for n in needed}
    for n in needed:
        for dep in set(tasks[n]["deps"]):
            users[dep].append(n)
    ready = [n for n, k in indeg.items() if k == 0]
    heapq.heapify(ready)
    plan = []
    while ready:
        n = heapq.heappop(ready)
        plan.append(n)
        for u in users[n]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(plan) != len(needed):
        stuck = sorted(n for n in needed if indeg[n] > 0)
        print(f"dependency cycle among: {' '.join(stuck)}", file=sys.stderr)
        return 3
    cwd = os.path.dirname(os.path.abspath(taskfile))
    for n in plan:
        print(f"==> {n}", flush=True)
        if dry:
            continue
        if subprocess.run(["bash", "-c", tasks[n]["cmd"]], cwd=cwd).returncode != 0:
            print(f"FAILED {n}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
EOF
