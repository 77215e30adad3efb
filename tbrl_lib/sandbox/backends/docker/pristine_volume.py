"""The task image's own tools and Python packages, as they were before the episode, mounted
read-only into every sandbox of that image at `PRISTINE_MOUNT`.

The agent is root in its container, so at the end of an episode the container's
`/usr/bin/python3`, `/usr/bin/env`, `jq` or numpy's `assert_allclose` may be wrappers that
make every check pass. The verifier therefore takes third-party code and programs from a copy
of the *image*, in a named volume (`tbrl-pristine-<key>`) built once by a throwaway container
of the image (the runtime's interpreter does the copying, so the image needs no tools),
`flock` + `.ready` marker as in `runtime_volume.py`.

One volume per *content*, not per image. The key hashes what the copy would hold: every
entry of the mirrored trees with its inode, ctime, mtime, size, mode and link target (read by
a first throwaway container, `DIGEST_SCRIPT`, well under a second), plus the recipe. Images
that differ only outside those trees (a task's /app, /tests, its labels: every instance of a
procedural family, most test images) share one volume; an image whose Dockerfile installs a
package or replaces a program gets its own. Inode and ctime are in the key because the
manifest below records them and the verifier trusts them. Measured: one suite run used to
leave 123 per-image volumes (10.9 GB); after two suite runs and several partial ones, 14
copies (1.0 GB). `prune(client)` (`tbrl docker reap --caches`)
removes every pristine volume no container uses; they are rebuilt on demand.

It mirrors, under the mount, the image's absolute paths:

- the PATH directories (`/usr/local/{s,}bin`, `/usr/{s,}bin`, `/{s,}bin`; merged-usr links stay links);
- every `/usr/lib/python3*` and `/usr/local/lib/python3*` (stdlib, lib-dynload, site- and
  dist-packages; the stdlib's `test`, `idlelib`, `turtledemo` are left out);
- `.manifest.json`: every entry of the PATH directories with the inode and ctime the image
  layer gives it, and the image's Python interpreters (`pristine_programs.scan`), from which
  the verifier restores what the agent changed and points the interpreters at the mirror.

Absolute symlinks are rewritten to point inside the mirror. Each mirrored stdlib gets a
`sitecustomize.py` of tbrl's that (1) serves standard-library names from that stdlib whatever
`sys.path` a test sets up (`stdlib_first`), and (2) appends the *container's* site-packages
directories after the pristine ones, so a pristine `python3` (which finds its stdlib next to
itself, under the mount) still imports packages the agent installed new — but an image
package always comes from the image. The verifier (see `tbrl_lib.rewards.verifier_runner`)
puts the mirrored site directories before the container's and the mirrored PATH first.

Trade-off: a task whose job is to fix, in place, a program or package of the image is tested
against the image's copy (see the verifier).

Residual risk: pristine programs are ordinary dynamically linked binaries, run by the
container's loader (`/lib64/ld-linux-x86-64.so.2`) with the container's shared libraries
(libc, libssl, libpython of a shared-libpython build). `/etc/ld.so.preload` is emptied before
every verification; a replaced `.so` or loader is not detected. Size: about 95 MB per distinct
content for `tbrl/base:trixie`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import docker
from docker.errors import APIError, NotFound

from tbrl_lib.sandbox import pristine_programs, stdlib_first
from tbrl_lib.sandbox.backends.docker.hosts import Host
from tbrl_lib.sandbox.backends.docker.runtime_volume import (
    RUNTIME_MOUNT,
    interpreter_argv,
    run_to_completion,
)
from tbrl_lib.sandbox.base import SandboxError

PRISTINE_MOUNT = "/.tbrl-pristine"
"""Where the image's pristine tools and packages are mounted (read-only)."""
BIN_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""The PATH the verifier gives tests; mirrored, and put first (under the mount) when they run."""
LABEL = "tbrl.pristine"
RECIPE_VERSION = "2"

SITECUSTOMIZE = (
    Path(stdlib_first.__file__).read_text()
    + """
# tbrl: standard-library names from this (the image's) stdlib, whatever sys.path says
install()
# tbrl: after the image's pristine site dirs, the container's (packages the agent added)
_m = "@MOUNT@"
for _p in [p for p in sys.path if p.startswith(_m + "/") and p.endswith("-packages")]:
    _c = _p[len(_m):]
    if _c not in sys.path and os.path.isdir(_c) and not os.path.islink(_c):
        sys.path.append(_c)
""".replace("@MOUNT@", PRISTINE_MOUNT)
)

PROGRAMS_AND_TREES = (
    Path(pristine_programs.__file__).read_text()
    + r"""
import glob
SKIP = {"test", "idlelib", "turtledemo"}

def python_dirs():
    return sorted(glob.glob("/usr/lib/python3*")) + sorted(glob.glob("/usr/local/lib/python3*"))

def skipped(d, names):
    if os.path.basename(d).startswith("python3.") and os.path.isfile(d + "/os.py"):
        return [n for n in names if n in SKIP]
    return []
"""
)
"""What the build and the digest share: `pristine_programs` (scan), the Python trees mirrored
beside the PATH dirs, and what of them is left out (a stdlib's test suites)."""

BUILD_SCRIPT = (
    PROGRAMS_AND_TREES
    + r"""
import fcntl, shutil, sys
V, M, BINS, SITECUSTOMIZE = "/vol", sys.argv[1], sys.argv[2].split(":"), sys.argv[3]
lock = open(V + "/.lock", "a")
fcntl.flock(lock, fcntl.LOCK_EX)
if os.path.exists(V + "/.ready"):
    sys.exit(0)
R = V  # the volume's root is the mirror's root (the engine cannot mount a subpath)
for name in os.listdir(R):
    if name != ".lock":
        p = os.path.join(R, name)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
with open(R + "/" + MANIFEST, "w") as fh:  # the image's entries, before anything is copied
    json.dump(scan(BINS), fh)
def copy(s, d):
    if stat.S_ISREG(os.lstat(s).st_mode):
        shutil.copy2(s, d)

def link(target, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    os.symlink(M + target if target.startswith("/") else target, dst)

for src in list(BINS) + python_dirs():
    dst = R + src
    if os.path.lexists(dst):
        continue
    if os.path.islink(src):
        link(os.readlink(src), dst)
    elif os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True, ignore=skipped, copy_function=copy,
                        ignore_dangling_symlinks=True)
for base, dirs, files in os.walk(R):
    for name in dirs + files:
        p = os.path.join(base, name)
        if os.path.islink(p) and os.readlink(p).startswith("/"):
            target = os.readlink(p)
            os.unlink(p)
            link(target, p)
for landmark in glob.glob(R + "/usr/lib/python3.*/os.py") + glob.glob(R + "/usr/local/lib/python3.*/os.py"):
    sc = os.path.join(os.path.dirname(landmark), "sitecustomize.py")
    if os.path.lexists(sc):
        os.unlink(sc)
    with open(sc, "w") as fh:
        fh.write(SITECUSTOMIZE)
open(V + "/.ready", "w").close()
"""
)
"""Runs in a throwaway container of the task image (the runtime's interpreter, own loader),
the volume at /vol; idempotent, and `flock` makes concurrent builders wait for the first."""

DIGEST_SCRIPT = (
    PROGRAMS_AND_TREES
    + r"""
import hashlib, sys
BINS = sys.argv[1].split(":")
digest = hashlib.sha256(json.dumps(scan(BINS)).encode())

def add(p):
    st = os.lstat(p)
    link = os.readlink(p) if stat.S_ISLNK(st.st_mode) else ""
    fields = (p, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, link)
    digest.update(repr(fields).encode())

for top in python_dirs():
    add(top)
    for base, dirs, files in os.walk(top):
        dirs[:] = sorted(set(dirs) - set(skipped(base, dirs)))
        for name in sorted(dirs + files):
            add(os.path.join(base, name))
print(digest.hexdigest())
"""
)
"""Prints a digest of everything `BUILD_SCRIPT` would copy (and its manifest would record)."""

# keyed by (Host.engine_key, image or volume name)
_locks: dict[tuple[tuple[str, int], str], threading.Lock] = {}
_ready: dict[tuple[tuple[str, int], str], str] = {}
_built: set[tuple[tuple[str, int], str]] = set()
_volume_locks: dict[tuple[tuple[str, int], str], threading.Lock] = {}
_registry_lock = threading.Lock()
build_seconds: dict[str, float] = {}
"""Volume name -> seconds its build took in this process (for benchmarks and logs)."""


def pristine_key(content_digest: str) -> str:
    """The volume key of an image whose mirrored trees hash to `content_digest`."""
    blob = f"{content_digest}\n{RECIPE_VERSION}\n{BUILD_SCRIPT}\n{SITECUSTOMIZE}\n{BIN_DIRS}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def volume_name(key: str) -> str:
    return f"tbrl-pristine-{key}"


async def ensure_pristine_volume(
    host: Host, image: str, runtime_volume: str, timeout_s: float = 600.0
) -> str:
    """The name of `image`'s pristine volume on `host`, built on first use."""
    with _registry_lock:
        done = _ready.get((host.engine_key, image))
    if done is not None and await host.call(_exists, host, done, what="finding a volume"):
        return done
    return await host.call(
        _ensure_blocking,
        host,
        image,
        runtime_volume,
        timeout_s,
        what="preparing the image's pristine tools",
    )


def _exists(host: Host, name: str) -> bool:
    """Is the volume still there? (A `prune` in another process may have removed it; the
    engine would then create an empty one at the mount, and the verifier find no copy.)"""
    try:
        host.client.volumes.get(name)
        return True
    except NotFound:
        with _registry_lock:
            for key in [k for k, v in _ready.items() if v == name]:
                del _ready[key]
            _built.discard((host.engine_key, name))
        return False


def _ensure_blocking(host: Host, image: str, runtime_volume: str, timeout_s: float) -> str:
    with _registry_lock:
        lock = _locks.setdefault((host.engine_key, image), threading.Lock())
    with lock:
        if (host.engine_key, image) in _ready:
            return _ready[(host.engine_key, image)]
        client = host.client
        try:
            client.images.get(image)
        except NotFound as err:
            raise SandboxError(
                f"image {image} vanished before its pristine copy was made", kind="image_missing"
            ) from err
        digest = content_digest(client, image, runtime_volume, timeout_s)
        name = volume_name(pristine_key(digest))
        with _registry_lock:
            volume_lock = _volume_locks.setdefault((host.engine_key, name), threading.Lock())
        with volume_lock:  # two images of one content: one copy, the other waits for it
            # built by this process for another image of the content, and still there (a
            # prune elsewhere may have removed it: a mount would then make an empty one)
            if (host.engine_key, name) not in _built or not _exists(host, name):
                try:
                    client.volumes.get(name)
                except NotFound:
                    client.volumes.create(name, labels={LABEL: digest})
                t0 = time.monotonic()
                _build(client, image, name, runtime_volume, timeout_s)
                build_seconds.setdefault(name, time.monotonic() - t0)
                with _registry_lock:
                    _built.add((host.engine_key, name))
        with _registry_lock:
            _ready[(host.engine_key, image)] = name
        return name


def content_digest(
    client: docker.DockerClient, image: str, runtime_volume: str, timeout_s: float = 600.0
) -> str:
    """The digest of `image`'s mirrored trees (`DIGEST_SCRIPT`, in a throwaway container)."""
    what = f"reading what {image} holds to mirror"
    paths = ":".join(BIN_DIRS)
    out = _run_script(
        client, image, "digest", runtime_volume, {}, timeout_s, what, DIGEST_SCRIPT, paths
    )
    digest = out.strip().splitlines()[-1] if out.strip() else ""
    if len(digest) != 64:
        raise SandboxError(
            f"{what} printed {out[-200:]!r}, not a digest",
            kind="runtime_failed",
        )
    return digest


def _build(
    client: docker.DockerClient, image: str, volume: str, runtime_volume: str, timeout_s: float
) -> None:
    """Fill the volume from `image` (a no-op when its `.ready` marker exists)."""
    _run_script(
        client,
        image,
        "build",
        runtime_volume,
        {volume: {"bind": "/vol", "mode": "rw"}},
        timeout_s,
        f"copying the pristine tools of {image} into {volume}",
        BUILD_SCRIPT,
        PRISTINE_MOUNT,
        ":".join(BIN_DIRS),
        SITECUSTOMIZE,
    )


def _run_script(
    client: docker.DockerClient,
    image: str,
    role: str,
    runtime_volume: str,
    volumes: dict,
    timeout_s: float,
    what: str,
    script: str,
    *args: str,
) -> str:
    """Run `script` with `args` by the runtime's interpreter in a throwaway, network-less
    container of `image` (the runtime volume and `volumes` mounted); return its stdout."""
    argv = [*interpreter_argv(), "-I", "-S", "-B", "-c", script, *args]
    container = client.containers.create(
        image,
        entrypoint=argv,
        command=[],
        user="0:0",
        labels={"tbrl.role": f"pristine-{role}"},
        network_disabled=True,
        working_dir="/",
        volumes={**volumes, runtime_volume: {"bind": RUNTIME_MOUNT, "mode": "ro"}},
    )
    return run_to_completion(container, timeout_s, what)


def forget() -> None:
    """Forget which images have a ready volume (tests that remove volumes call this)."""
    with _registry_lock:
        _ready.clear()
        _built.clear()


def prune(client: docker.DockerClient, only: set[str] | None = None) -> tuple[list[str], int]:
    """Remove every pristine volume no container uses (they are a cache: rebuilt on demand),
    or only those named in `only`; return the names removed and how many were kept because
    a container mounts them (the engine refuses: 409)."""
    removed, in_use = [], 0
    # by name too: a mount of a removed volume by a process of an older tbrl makes the
    # engine create an empty one, without the label
    for volume in client.volumes.list(filters={"name": volume_name("")}):
        if not volume.name.startswith(volume_name("")):
            continue
        if only is not None and volume.name not in only:
            continue
        try:
            volume.remove()
            removed.append(volume.name)
        except NotFound:
            continue
        except APIError as err:
            if err.status_code != 409:  # 409: in use by a container
                raise
            in_use += 1
    forget()
    return removed, in_use


__all__ = [
    "BIN_DIRS",
    "PRISTINE_MOUNT",
    "content_digest",
    "ensure_pristine_volume",
    "forget",
    "pristine_key",
    "prune",
    "volume_name",
]
