#!/usr/bin/env bash
set -euo pipefail
cd /app

cd /app/data
find . -type f -size +50000c -printf '%s %P\n' | sort -k1,1nr -k2,2 > /app/large_files.txt
