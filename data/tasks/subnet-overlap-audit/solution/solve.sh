#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
import ipaddress, json
from itertools import combinations
valid, invalid = {}, []
for line in open("/app/networks.txt"):
    if line.strip():
        name, cidr = line.split()
        try:
            valid[name] = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            invalid.append(name)
pairs = sorted(" ".join(sorted(p)) for p in combinations(valid, 2)
               if valid[p[0]].version == valid[p[1]].version and valid[p[0]].overlaps(valid[p[1]]))
open("/app/invalid.txt", "w").write("".join(n + "\n" for n in sorted(invalid)))
open("/app/overlaps.txt", "w").write("".join(p + "\n" for p in pairs))
v4 = ipaddress.collapse_addresses(n for n in valid.values() if n.version == 4)
json.dump({"valid": len(valid), "invalid": len(invalid), "ipv4_addresses": sum(n.num_addresses for n in v4)},
          open("/app/summary.json", "w"))
EOF
