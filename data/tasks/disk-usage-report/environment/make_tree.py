import os, time
spec = {
    "alpha/src/main.py": (1200, 5), "alpha/build/app.bin": (300000, 200), "alpha/build/cache.tmp": (4096, 100),
    "beta/data/raw.csv": (150000, 40), "beta/data/old.tmp": (20000, 120), "beta/notes.txt": (900, 1),
    "gamma/logs/a.log": (50000, 95), "gamma/logs/b.log": (70000, 10), "gamma/.cache/x.tmp": (100, 400),
    "delta/empty/.keep": (0, 3),
}
now = 1_700_000_000
for rel, (size, age_days) in spec.items():
    p = os.path.join("/srv/projects", rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(b"z" * size)
    os.utime(p, (now - age_days * 86400, now - age_days * 86400))
os.symlink("/srv/projects/alpha/build/app.bin", "/srv/projects/beta/link.bin")
with open("/srv/projects/REFERENCE_NOW", "w") as f:
    f.write(str(now))
