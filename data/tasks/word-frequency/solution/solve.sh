#!/usr/bin/env bash
set -euo pipefail
cd /app

grep -oE '[A-Za-z]+' story.txt | tr 'A-Z' 'a-z' | sort | uniq -c \
  | awk '{print $2, $1}' | sort -k2,2nr -k1,1 | head -n 10 > top_words.txt
