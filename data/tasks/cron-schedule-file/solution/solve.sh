#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /etc/cron.d/maintenance <<'EOF'
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# m  h     dom mon dow  user      command
30   2     *   *   *    root      /usr/local/bin/backup.sh
*/15 8-18  *   *   1-5  www-data  /usr/local/bin/report.sh
0    4     1   *   *    root      /usr/local/bin/cleanup.sh --all
EOF
chown root:root /etc/cron.d/maintenance
chmod 644 /etc/cron.d/maintenance
