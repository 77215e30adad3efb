#!/usr/bin/env bash
set -euo pipefail
cd /app

python3 - <<'EOF'
from pathlib import Path
p = Path("/app/convert.py")
s = p.read_text()
s = s.replace("return c * 5 / 9 + 32", "return c * 9 / 5 + 32")
if "def kelvin_to_c" not in s:
    s = s.replace("def main(argv):", "def kelvin_to_c(k):\n    return k - 273.15\n\n\ndef main(argv):")
p.write_text(s)
EOF
