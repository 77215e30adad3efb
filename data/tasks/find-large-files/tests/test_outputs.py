import os
from pathlib import Path


def expected():
    found = []
    for dirpath, _, names in os.walk("/app/data"):
        for name in names:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            size = os.path.getsize(p)
            if size > 50000:
                found.append((size, os.path.relpath(p, "/app/data")))
    found.sort(key=lambda t: (-t[0], t[1]))
    return [f"{s} {p}" for s, p in found]


def lines():
    return Path("/app/large_files.txt").read_text().splitlines()


def test_exact_listing():
    assert lines() == expected()


def test_threshold_boundaries():
    paths = {l.split(" ", 1)[1] for l in lines()}
    assert "media/clip.raw" in paths and "media/thumb.raw" not in paths and "b/c/notes.md" not in paths


def test_hidden_and_links():
    paths = {l.split(" ", 1)[1] for l in lines()}
    assert "b/.hidden_cache" in paths
    assert "link_to_dump" not in paths
