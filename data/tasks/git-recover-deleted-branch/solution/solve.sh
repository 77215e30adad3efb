#!/usr/bin/env bash
set -euo pipefail
cd /app

cd /app/repo
if ! git rev-parse -q --verify feature-login >/dev/null; then
  sha=$(git log -g --all --format='%H %s' | awk '$2 == "Validate" && $3 == "login" && !n {print $1; n = 1}')
  if [ -z "$sha" ]; then
    sha=$(git fsck --lost-found --no-reflogs 2>/dev/null | awk '{print $3}' | while read c; do
      [ "$(git log -1 --format=%s "$c" 2>/dev/null)" = "Validate login input" ] && echo "$c"; done | head -n1)
  fi
  git branch feature-login "$sha"
fi
git checkout -q main
if ! git merge-base --is-ancestor feature-login main; then
  git merge --no-ff --no-edit -q feature-login
fi
