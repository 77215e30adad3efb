"""The verifier's own Python + pytest runtime: built once per Docker host, copied in per run.

The agent is root in its container for the whole episode, so nothing the container holds
can be trusted at verification time: `python`, `pytest`, site-packages, `/lib64/ld-linux`,
shell rc files. The verifier therefore brings its own runtime — the dynamic loader, the
Python 3.13 interpreter, its standard library and shared libraries, pytest and its
dependencies, and bash — assembled from the offline base image `tbrl/base:trixie`
(`BASE_IMAGE`), and runs it through its *own* loader:

    <root>/lib/ld.so --inhibit-cache --library-path <root>/lib <root>/usr/bin/interp -I -S ...

so no binary or library of the container is loaded. The runtime is a tar (about 20 MB
compressed) cached under `~/.cache/tbrl/` keyed by the base image id and this recipe, and
is put into a fresh, randomly named root-only directory of the task container *after* the
episode with the Docker API (`put_archive`, done by the daemon, not by a container process).
Names contain neither `python` nor `pytest`, so `pkill -f python` loops miss it.

Left out: a read-only volume mount of the runtime (faster for hundreds of rollouts on one
host, but needs a mount option on every sandbox container); the copy costs ~0.2-0.5 s.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from pathlib import Path

from tbrl_lib.sandbox.base_images import BASE_IMAGE

RECIPE_VERSION = "1"
CACHE_DIR = Path(os.environ.get("TBRL_CACHE", Path.home() / ".cache" / "tbrl"))

BUILD_SCRIPT = r"""
set -eu
R=/rt
mkdir -p $R/lib $R/usr/bin $R/usr/lib $R/site
cp -L /lib64/ld-linux-x86-64.so.2 $R/lib/ld.so
cp -L /usr/bin/python3.13 $R/usr/bin/interp
cp -L /bin/bash $R/usr/bin/bash
tar -C /usr/lib --exclude='python3.13/test' --exclude='python3.13/idlelib' \
    --exclude='python3.13/tkinter' --exclude='python3.13/turtledemo' \
    --exclude='python3.13/ensurepip' --exclude='python3.13/config-3.13-*' \
    --exclude='python3.13/lib-dynload/_test*' --exclude='python3.13/lib-dynload/xx*' \
    -cf - python3.13 | tar -C $R/usr/lib -xf -
for p in pytest _pytest pluggy iniconfig packaging py.py; do
  cp -a /usr/lib/python3/dist-packages/$p $R/site/
done
for lib in $(ldd /usr/bin/python3.13 /bin/bash $R/usr/lib/python3.13/lib-dynload/*.so \
             | grep -o '/[^ ]*\.so[^ :]*' | sort -u); do
  cp -L "$lib" $R/lib/
done
chmod -R a-w,go-rwx $R
"""
"""Runs inside a throwaway container of BASE_IMAGE; leaves the runtime at /rt."""

_lock = threading.Lock()
_memory: dict[str, bytes] = {}


def runtime_key(docker_client) -> str:
    """Base image id + recipe: a new base image or recipe gives a new runtime."""
    image_id = docker_client.images.get(BASE_IMAGE).id
    blob = f"{image_id}\n{RECIPE_VERSION}\n{BUILD_SCRIPT}".encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def runtime_tar(docker_client, timeout_s: float = 180.0) -> bytes:
    """The runtime as a tar whose single top-level entry is `rt/`; built on first use."""
    key = runtime_key(docker_client)
    with _lock:
        if key in _memory:
            return _memory[key]
        path = CACHE_DIR / f"verifier-runtime-{key}.tar"
        if path.exists():
            data = path.read_bytes()
        else:
            data = _build(docker_client, timeout_s)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(data)
            tmp.replace(path)
        _memory[key] = data
        return data


def _build(docker_client, timeout_s: float) -> bytes:
    container = docker_client.containers.create(
        BASE_IMAGE, ["bash", "-c", BUILD_SCRIPT], labels={"tbrl.role": "verifier-runtime-build"},
        network_disabled=True,
    )
    try:
        container.start()
        result = container.wait(timeout=timeout_s)
        if result.get("StatusCode") != 0:
            logs = container.logs().decode(errors="replace")[-2000:]
            raise RuntimeError(f"building the verifier runtime from {BASE_IMAGE} failed:\n{logs}")
        stream, _ = container.get_archive("/rt")
        return b"".join(stream)
    finally:
        container.remove(force=True)


def directory_tar(name: str, mode: int = 0o700) -> bytes:
    """A tar holding one empty directory `name` (owned by root) — the verifier's fresh root."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = mode
        tar.addfile(info)
    return buf.getvalue()


def files_tar(files: dict[str, bytes], mode: int = 0o600) -> bytes:
    """A tar of regular files (relative path -> content), parents created as 0700 dirs."""
    buf = io.BytesIO()
    seen: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, content in sorted(files.items()):
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                parent = "/".join(parts[:depth])
                if parent not in seen:
                    seen.add(parent)
                    info = tarfile.TarInfo(parent)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o700
                    tar.addfile(info)
            info = tarfile.TarInfo(rel)
            info.size = len(content)
            info.mode = mode
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()
