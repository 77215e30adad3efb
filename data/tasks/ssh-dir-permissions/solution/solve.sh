#!/usr/bin/env bash
set -euo pipefail
cd /app

chmod 700 /root/.ssh
chmod 600 /root/.ssh/id_ed25519 /root/.ssh/deploy_key /root/.ssh/authorized_keys /root/.ssh/config
chmod 644 /root/.ssh/*.pub
