"""Text statistics. Usage: python3 -m textstats FILE"""
from .cli import main
from .core import tokenize


def count_words(text):
    """Map each lowercased word to its count."""
    counts = {}
    for word in tokenize(text):
        counts[word] = counts.get(word, 0) + 1
    return counts
