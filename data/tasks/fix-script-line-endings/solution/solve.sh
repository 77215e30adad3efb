#!/usr/bin/env bash
set -euo pipefail
cd /app

sed -i 's/\r$//' bin/report.sh
chmod +x bin/report.sh
