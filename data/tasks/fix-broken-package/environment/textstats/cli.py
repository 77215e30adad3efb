import json
import sys

from textstats import count_words
from textstats.core import average_length, tokenize


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = open(argv[0], encoding="utf-8").read()
    words = tokenize(text)
    counts = count_words(text)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    print(json.dumps({"words": len(words), "unique": len(counts), "top": top,
                      "avg_word_length": round(average_length(words), 2)}))
    return 0
