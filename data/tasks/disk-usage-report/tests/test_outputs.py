import os


ROOT = "/srv/projects"


def expected_usage():
    rows = []
    for name in os.listdir(ROOT):
        p = os.path.join(ROOT, name)
        if not os.path.isdir(p) or os.path.islink(p):
            continue
        total = 0
        for dp, _, files in os.walk(p):
            for f in files:
                fp = os.path.join(dp, f)
                if not os.path.islink(fp) and os.path.isfile(fp):
                    total += os.path.getsize(fp)
        rows.append((name, total))
    rows.sort(key=lambda r: (-r[1], r[0]))
    return [f"{n}\t{b}" for n, b in rows]


def test_usage():
    lines = [l for l in open("/app/usage.tsv").read().splitlines() if l]
    assert lines == expected_usage()


def test_usage_includes_empty_project_and_skips_links():
    lines = dict(l.split("\t") for l in open("/app/usage.tsv").read().splitlines() if l)
    assert lines["delta"] == "0" and lines["beta"] == str(150000 + 20000 + 900)


def test_stale_tmp():
    now = int(open(os.path.join(ROOT, "REFERENCE_NOW")).read())
    want = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(ROOT) for f in fs
                  if f.endswith(".tmp") and now - os.path.getmtime(os.path.join(dp, f)) > 90 * 86400)
    got = [l for l in open("/app/stale_tmp.txt").read().splitlines() if l]
    assert got == want and len(want) == 3


def test_tree_untouched():
    assert os.path.getsize(os.path.join(ROOT, "alpha/build/app.bin")) == 300000
    assert os.path.islink(os.path.join(ROOT, "beta/link.bin"))
    assert os.path.exists(os.path.join(ROOT, "gamma/.cache/x.tmp"))
    assert os.path.exists("/app/stale_tmp.txt")
