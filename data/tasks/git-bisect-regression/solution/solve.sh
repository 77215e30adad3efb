#!/usr/bin/env bash
set -euo pipefail
cd /app

cd /app/repo
git checkout -q main
if [ "$(git log -1 --format=%s)" = "Final docs pass" ]; then
  cat > /tmp/check.sh <<'EOF'
#!/bin/sh
test "$(python3 -c 'import pricing; print(pricing.order_total([(1999, 3)], 10))')" = 5398
EOF
  chmod +x /tmp/check.sh
  first=$(git rev-list --max-parents=0 HEAD)
  git bisect start HEAD "$first" >/dev/null
  git bisect run /tmp/check.sh >/dev/null
  bad=$(git rev-parse refs/bisect/bad)
  git bisect reset main >/dev/null 2>&1
  echo "$bad" > /app/first_bad_commit.txt
  git revert --no-edit "$bad" >/dev/null
fi
