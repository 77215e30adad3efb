import os
import stat

NAMES = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
         "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
         "sep": 9, "oct": 10, "nov": 11, "dec": 12}
RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]


def expand(field, lo, hi):
    values = set()
    for part in field.lower().split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/")
            step = int(s)
        if part == "*":
            a, b = lo, hi
        elif "-" in part:
            a, b = (NAMES.get(x) if x in NAMES else int(x) for x in part.split("-"))
        else:
            a = NAMES.get(part) if part in NAMES else int(part)
            b = hi if step != 1 else a
        values.update(range(a, b + 1, step))
    return values


def jobs():
    out = {}
    for line in open("/etc/cron.d/maintenance"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        first = line.split()[0]
        if "=" in first and not first[0].isdigit() and first[0] != "*":
            continue
        f = line.split(None, 6)
        sets = [expand(x, lo, hi) for x, (lo, hi) in zip(f[:5], RANGES)]
        if 7 in sets[4]:
            sets[4] = (sets[4] - {7}) | {0}
        out[f[6].strip()] = (f[5], sets)
    return out


def test_file_mode_and_owner():
    st = os.stat("/etc/cron.d/maintenance")
    assert stat.S_IMODE(st.st_mode) == 0o644 and st.st_uid == 0
    assert len(jobs()) == 3


def test_backup_daily():
    user, (m, h, dom, mon, dow) = jobs()["/usr/local/bin/backup.sh"]
    assert user == "root" and m == {30} and h == {2}
    assert dom == set(range(1, 32)) and mon == set(range(1, 13)) and dow == set(range(0, 7))


def test_report_weekdays():
    user, (m, h, dom, mon, dow) = jobs()["/usr/local/bin/report.sh"]
    assert user == "www-data" and m == {0, 15, 30, 45} and h == set(range(8, 19))
    assert dow == {1, 2, 3, 4, 5} and dom == set(range(1, 32)) and mon == set(range(1, 13))


def test_cleanup_monthly():
    user, (m, h, dom, mon, dow) = jobs()["/usr/local/bin/cleanup.sh --all"]
    assert user == "root" and m == {0} and h == {4} and dom == {1}
    assert mon == set(range(1, 13)) and dow == set(range(0, 7))
