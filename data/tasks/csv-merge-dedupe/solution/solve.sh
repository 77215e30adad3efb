#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import csv, glob, os
from datetime import datetime
best = {}
for path in sorted(glob.glob("/app/exports/*.csv")):
    fmt = "%d/%m/%Y" if os.path.basename(path) == "legacy.csv" else "%Y-%m-%d"
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            row = {k.strip().lower(): v for k, v in row.items()}
            email = row["email"].strip().lower()
            date = datetime.strptime(row["updated_at"].strip(), fmt).date()
            if email not in best or date > best[email][1]:
                best[email] = (row["name"], date)
with open("/app/contacts.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["email", "name", "updated_at"])
    for email, (name, date) in sorted(best.items()):
        w.writerow([email, name, date.isoformat()])
EOF
