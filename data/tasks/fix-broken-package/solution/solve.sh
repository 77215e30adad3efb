#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/textstats/__init__.py <<'EOF'
"""Text statistics. Usage: python3 -m textstats FILE"""
from .core import tokenize


def count_words(text):
    """Map each lowercased word to its count."""
    counts = {}
    for word in tokenize(text):
        counts[word] = counts.get(word, 0) + 1
    return counts


from .cli import main  # noqa: E402  (after count_words, which cli imports)
EOF
cat > /app/textstats/core.py <<'EOF'
import re

WORD = re.compile(r"(?:[^\W_]|')+")


def tokenize(text):
    """Words are maximal runs of letters, digits and apostrophes, lowercased."""
    return WORD.findall(text.lower())


def average_length(words):
    """Mean word length, 0.0 for no words."""
    return sum(len(w) for w in words) / len(words) if words else 0.0
EOF
cat > /app/textstats/__main__.py <<'EOF'
import sys

from textstats.cli import main

sys.exit(main())
EOF
