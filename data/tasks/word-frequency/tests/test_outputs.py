import re
from collections import Counter


def expected():
    words = re.findall(r"[A-Za-z]+", open("/app/story.txt").read().lower())
    return sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))[:10]


def lines():
    return open("/app/top_words.txt").read().split("\n")


def test_ten_lines_format():
    ls = [l for l in lines() if l]
    assert len(ls) == 10
    assert all(re.fullmatch(r"[a-z]+ \d+", l) for l in ls)


def test_counts_exact():
    ls = [l for l in lines() if l]
    assert [(w, int(c)) for w, c in (l.split() for l in ls)] == expected()
