#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import json, os, re
root = "/app/repo"
aws = re.compile(r"AKIA[A-Z0-9]{16}(?![A-Z0-9])")
pem = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
assign = re.compile(r'\b(?=([A-Za-z_][\w.-]*)["\x27]?\s*(?:=|:)\s*(.*))')
def literal(value):
    v = value.strip().rstrip(",;").strip().strip("\"'")
    if not v or v.lower() == "changeme" or v.startswith("<") or v.startswith("${"):
        return False
    return not (v.startswith("os.environ") or v.startswith("process.env"))
found = []
for dirpath, _, names in os.walk(root):
    for name in names:
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, root)
        for n, line in enumerate(open(path, errors="replace"), 1):
            if aws.search(line):
                found.append((rel, n, "aws_key"))
            if pem.search(line):
                found.append((rel, n, "private_key"))
            for m in assign.finditer(line):
                if re.search("password|secret|token", m.group(1), re.I) and literal(m.group(2)):
                    found.append((rel, n, "credential"))
                    break
found = sorted(set(found))
json.dump([{"file": f, "line": l, "kind": k} for f, l, k in found], open("/app/leaks.json", "w"), indent=1)
EOF
