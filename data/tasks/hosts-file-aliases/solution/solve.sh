#!/usr/bin/env bash
set -euo pipefail
cd /app

while read -r name addr; do
  [ -z "$name" ] && continue
  grep -qE "^$addr[[:space:]]+$name\$" /etc/hosts || echo "$addr $name" >> /etc/hosts
done < /app/services.txt
