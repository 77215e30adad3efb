#!/usr/bin/env bash
set -euo pipefail
cd /app

cd /opt/release
if [ ! -f /app/drift.txt ]; then
  {
    while read -r sum path; do
      if [ ! -f "$path" ]; then echo "MISSING $path"
      elif [ "$(sha256sum "$path" | cut -d' ' -f1)" != "$sum" ]; then echo "MODIFIED $path"; fi
    done < /app/incoming/SHA256SUMS
    find . -type f -printf '%P\n' | while read -r f; do
      grep -q "  $f\$" /app/incoming/SHA256SUMS || echo "EXTRA $f"
    done
  } | sort -k2,2 > /app/drift.txt
fi
tmp=$(mktemp -d)
tar -xzf /app/incoming/release-v3.tar.gz -C "$tmp"
find . -type f -printf '%P\n' | while read -r f; do
  grep -q "  $f\$" /app/incoming/SHA256SUMS || rm -f "$f"
done
cp -a "$tmp/release/." /opt/release/
rm -rf "$tmp"
