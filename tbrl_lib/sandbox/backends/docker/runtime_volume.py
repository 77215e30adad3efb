"""tbrl's own runtime, mounted read-only into every sandbox at `RUNTIME_MOUNT`.

The agent is root in its container for the whole episode, so nothing the container holds
can be trusted afterwards: `python`, `pytest`, site-packages, `/lib64/ld-linux`, shell rc
files. The verifier therefore brings its own runtime — the dynamic loader, the Python 3.13
interpreter with its standard library and shared libraries, pytest and its dependencies,
and bash — assembled from the offline root filesystem `tbrl/rootfs:trixie`
(`base_images.RUNTIME_SOURCE`: it keeps Debian's pytest, which the task images do not carry,
so a task's own pip installs never meet it), and runs it through its *own* loader:

    /.tbrl-rt/rt/lib/ld.so --inhibit-cache --library-path /.tbrl-rt/rt/lib /.tbrl-rt/rt/usr/bin/interp -I -S ...

so no binary or library of the container is loaded. Names contain neither `python` nor
`pytest`, so `pkill -f python` loops miss it.

The runtime lives in one named Docker volume per engine (`tbrl-runtime-<key>`, key = source
image id + recipe), built once by a throwaway container and mounted read-only into every
sandbox container at creation: nothing is copied per rollout, and the agent can neither
change it (read-only mount) nor move it (a mount point), since it has no CAP_SYS_ADMIN.

The same volume carries `init.py`, the sandbox's PID 1 (run by the runtime's interpreter):
it ignores every signal sent from inside the container (the kernel never delivers SIGKILL
or SIGSTOP to a namespace's init from inside it) and reaps orphans. An agent that kills everything it can
see kills its own shell, not the container; a container that stops was stopped from
outside, which is what lets `SandboxError.infra` be decided by cause.

Left out: old runtime volumes are not deleted when the recipe changes (about 60 MB each;
`docker volume rm` them by the `tbrl.runtime` label).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading

import docker
from docker.errors import NotFound

from tbrl_lib.docker.base_images import RUNTIME_SOURCE
from tbrl_lib.sandbox.backends.docker.hosts import Host
from tbrl_lib.sandbox.base import SandboxError
from tbrl_lib.sandbox.runtime import RUNTIME_MOUNT, interpreter_argv, loader_argv

INTERPRETER = interpreter_argv()
BASH = [*loader_argv(), RUNTIME_MOUNT + "/rt/usr/bin/bash"]
INIT = [*INTERPRETER, "-I", "-S", "-B", RUNTIME_MOUNT + "/init.py"]
"""The sandbox container's entrypoint (its PID 1)."""
LABEL = "tbrl.runtime"
RECIPE_VERSION = "2"

BUILD_SCRIPT = r"""
set -eu
exec 9>/vol/.lock
flock 9
[ -f /vol/.ready ] && exit 0
rm -rf /vol/rt /vol/init.py
R=/vol/rt
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
cp /stage/init.py /vol/init.py
chmod -R a-w,go-w /vol/rt /vol/init.py
touch /vol/.ready
"""
"""Runs in a throwaway container of RUNTIME_SOURCE with the volume at /vol; idempotent, and
`flock` makes concurrent builders (other processes) wait for the first one."""

INIT_SCRIPT = """\
# tbrl sandbox init (PID 1): ignore every signal sent from inside, reap orphans, never exit.
import os, signal
for sig in signal.valid_signals():
    if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
    signal.sigtimedwait([signal.SIGCHLD], 1.0)
"""
"""Ignoring (not handling) a signal means the kernel drops it for a namespace's init; SIGKILL
and SIGSTOP are never delivered to it from inside. Orphans are adopted by PID 1 and reaped
as soon as they exit (SIGCHLD is blocked and waited for, with a 1 s poll as the backstop), so
long episodes do not fill the pids limit with zombies, and a killed tree is gone at once."""

EngineKey = tuple[str, int]  # Host.engine_key
_locks: dict[EngineKey, threading.Lock] = {}
_ready: dict[EngineKey, str] = {}
_registry_lock = threading.Lock()


def runtime_key(client: docker.DockerClient) -> str:
    """Source image id + recipe: a new source image or recipe gives a new volume."""
    try:
        image_id = client.images.get(RUNTIME_SOURCE).id
    except NotFound as err:
        raise SandboxError(
            f"{RUNTIME_SOURCE} is missing, and the verifier runtime is built from it: "
            "run `tbrl setup` (or `tbrl images bootstrap`)",
            kind="runtime_failed",
        ) from err
    blob = f"{image_id}\n{RECIPE_VERSION}\n{BUILD_SCRIPT}\n{INIT_SCRIPT}".encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def volume_name(key: str) -> str:
    return f"tbrl-runtime-{key}"


async def ensure_runtime_volume(host: Host, timeout_s: float = 300.0) -> str:
    """The name of `host`'s runtime volume, built on first use (once per engine)."""
    with _registry_lock:
        done = _ready.get(host.engine_key)
    if done is not None:
        return done
    return await host.call(_ensure_blocking, host, timeout_s, what="preparing the verifier runtime")


def _ensure_blocking(host: Host, timeout_s: float) -> str:
    with _registry_lock:
        lock = _locks.setdefault(host.engine_key, threading.Lock())
    with lock:
        if host.engine_key in _ready:
            return _ready[host.engine_key]
        client = host.client
        name = volume_name(runtime_key(client))
        try:
            client.volumes.get(name)
        except NotFound:
            client.volumes.create(name, labels={LABEL: name})
        _build(client, name, timeout_s)
        with _registry_lock:
            _ready[host.engine_key] = name
        return name


def _build(client: docker.DockerClient, volume: str, timeout_s: float) -> None:
    """Fill the volume (a no-op when its `.ready` marker exists)."""
    container = client.containers.create(
        RUNTIME_SOURCE,
        ["bash", "-c", BUILD_SCRIPT],
        labels={"tbrl.role": "runtime-build"},
        network_disabled=True,
        volumes={volume: {"bind": "/vol", "mode": "rw"}},
    )
    container.put_archive("/", _stage_tar({"stage/init.py": INIT_SCRIPT.encode()}))
    run_to_completion(
        container, timeout_s, f"building the verifier runtime volume {volume} from {RUNTIME_SOURCE}"
    )


def run_to_completion(container, timeout_s: float, what: str) -> str:
    """Start a helper container (one that fills or reads a volume), wait for it, always
    remove it, and return its stdout; a non-zero exit is `SandboxError` (`runtime_failed`)
    with `what` and its last log lines."""
    try:
        container.start()
        result = container.wait(timeout=timeout_s)
        if result.get("StatusCode") != 0:
            logs = container.logs().decode(errors="replace")[-2000:]
            raise SandboxError(f"{what} failed:\n{logs}", kind="runtime_failed")
        return container.logs(stdout=True, stderr=False).decode(errors="replace")
    finally:
        container.remove(force=True)


def _stage_tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def forget() -> None:
    """Forget which engines have a ready volume (tests that remove volumes call this)."""
    with _registry_lock:
        _ready.clear()


__all__ = [
    "BASH",
    "INIT",
    "INTERPRETER",
    "RUNTIME_MOUNT",
    "ensure_runtime_volume",
    "forget",
    "interpreter_argv",
    "loader_argv",
    "runtime_key",
    "volume_name",
]
