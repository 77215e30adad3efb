#!/usr/bin/env bash
set -euo pipefail
cd /app

getent group ops >/dev/null || groupadd -g 2000 ops
id deploy >/dev/null 2>&1 || useradd -m -u 1500 -U -s /bin/bash -d /home/deploy deploy
usermod -aG ops deploy
chown -R deploy:ops /srv/app
chmod 2775 /srv/app
