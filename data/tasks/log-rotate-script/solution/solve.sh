#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/rotate.sh <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
dir=${1:-}
keep=${2:-}
if [[ ! "$keep" =~ ^[1-9][0-9]*$ ]]; then echo "KEEP must be a positive integer" >&2; exit 2; fi
if [[ ! -d "$dir" ]]; then echo "not a directory: $dir" >&2; exit 2; fi
log="$dir/app.log"
[[ -s "$log" ]] || exit 0
for ((n = keep; n >= 1; n--)); do
  if [[ -e "$log.$n.gz" ]]; then
    if (( n == keep )); then rm -f "$log.$n.gz"; else mv -f "$log.$n.gz" "$log.$((n + 1)).gz"; fi
  fi
done
mode=$(stat -c %a "$log")
gzip -c "$log" > "$log.1.gz"
: > "$log"
chmod "$mode" "$log"
EOF
chmod +x /app/rotate.sh
