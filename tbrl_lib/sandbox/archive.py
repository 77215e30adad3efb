"""`tar_of`: the tar a caller hands to `Sandbox.put_archive` (the verifier's tests, for one).

Backend-neutral: a tar is what every backend's `put_archive` extracts, locally or on a
remote node.
"""

from __future__ import annotations

import io
import tarfile
import time


def tar_of(
    files: dict[str, bytes],
    dir_mode: int = 0o755,
    file_mode: int = 0o644,
    modes: dict[str, int] | None = None,
    existing_dirs: set[str] | frozenset[str] = frozenset(),
) -> bytes:
    """A tar of regular files (relative path -> bytes) with an entry for every parent
    directory (`dir_mode`, root-owned), except `existing_dirs`, which are left as they are in
    the container (an entry for `etc` would reset /etc's mode)."""
    buf = io.BytesIO()
    seen: set[str] = set(existing_dirs)
    now = int(time.time())
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, content in sorted(files.items()):
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                parent = "/".join(parts[:depth])
                if parent not in seen:
                    seen.add(parent)
                    info = tarfile.TarInfo(parent)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, dir_mode, now
                    tar.addfile(info)
            info = tarfile.TarInfo(rel)
            info.size, info.mtime = len(content), now
            info.mode = (modes or {}).get(rel, file_mode)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()
