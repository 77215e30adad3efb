#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import csv, json
users = json.load(open("/app/users.json"))
with open("/app/active_users.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "name", "email"])
    for u in sorted(users, key=lambda u: u["id"]):
        if u["active"]:
            w.writerow([u["id"], u["name"], u["email"]])
EOF
