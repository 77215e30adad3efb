#!/usr/bin/env bash
set -euo pipefail
cd /app

cd /app/project
if [ ! -d .git ]; then
  git init -q -b main
  git config user.name "Build Bot"
  git config user.email "bot@example.com"
  printf 'secrets.env\nbuild/\n' > .gitignore
  git add -A
  git commit -q -m "Initial commit"
fi
