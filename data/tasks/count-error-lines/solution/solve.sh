#!/usr/bin/env bash
set -euo pipefail
cd /app

awk '$2 == "ERROR"' logs/app.log | wc -l | tr -d ' ' > error_count.txt
awk '$2 == "ERROR" { gsub(/[][]/, "", $3); print $3 }' logs/app.log | sort | uniq -c \
  | jq -Rn '[inputs | capture("^\\s*(?<n>[0-9]+) (?<c>\\S+)$") | {(.c): (.n | tonumber)}] | add // {}' \
  > error_components.json
