#!/usr/bin/env bash
set -euo pipefail
cd /app

cd /srv/projects
for d in */; do
  d=${d%/}
  [ -L "$d" ] && continue
  printf '%s\t%s\n' "$d" "$(find "$d" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
done | sort -t$'\t' -k2,2nr -k1,1 > /app/usage.tsv
now=$(cat /srv/projects/REFERENCE_NOW)
find /srv/projects -type f -name '*.tmp' -printf '%T@ %p\n' \
  | awk -v now="$now" 'now - $1 > 90 * 86400 { sub(/^[^ ]+ /, ""); print }' | sort > /app/stale_tmp.txt
