import os
sizes = {"a/report.csv": 80000, "a/tiny.txt": 10, "b/c/dump.bin": 250000, "b/c/notes.md": 50000,
         "b/.hidden_cache": 120000, "media/clip.raw": 50001, "media/thumb.raw": 49999, "z.log": 90000}
for rel, size in sizes.items():
    path = os.path.join("/app/data", rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x" * size)
os.symlink("/app/data/b/c/dump.bin", "/app/data/link_to_dump")
