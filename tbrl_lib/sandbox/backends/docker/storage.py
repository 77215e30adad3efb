"""Storage limits on any Docker host: each sandbox's writes measured, and ended past its cap.

Where the storage driver takes `--storage-opt size` (overlay2 on xfs with pquota, btrfs,
zfs) the kernel holds a container's writable layer to its size (`container.py` asks for it);
overlay2 on ext4, Docker's default and what nearly every laptop and CI runner has, refuses
it. Kubernetes holds a pod's ephemeral storage there by measuring and evicting; so does
tbrl, on every host (with the quota too, for the volumes it does not cover):

- one *meter* per engine and tbrl process: a small container of the runtime's source image
  running `METER` (stdlib Python), the engine's data root bind-mounted read-only and not
  recursively (no other container's mounts), network off, every capability dropped but
  DAC_READ_SEARCH, removed when this process exits (`close_meters`), and by the engine when
  its stdin closes (this process's socket to it: even after SIGKILL; `tbrl.owner` lets the
  reaper find it should the engine not).
  It sees the data root as the engine does, so it works for a user in the `docker` group
  (who cannot read /var/lib/docker), on a remote engine, and on every node of the `ray`
  backend (the node's host actor runs this code for its engine);
- a thread of this process (not the event loop: a busy loop cannot delay it) sends it one
  request every `POLL_S` with every watched sandbox's writable layer (its overlay upper
  directory) and read-write volumes; the meter answers the blocks under each (`du`-style:
  `st_blocks`, so `fallocate` and ext4's delayed allocation count, hard links once; a
  walk stops once past the cap) and the data root's free space. When a round of walks takes
  more than `BUDGET` of a core (sandboxes holding tens of thousands of files), rounds are
  spaced out to keep to it, and between them the free space alone is read every `POLL_S`: a
  drop larger than the least room a sandbox has left starts a round at once;
- a sandbox past its cap is removed at once, container and anonymous volumes (`on_over`
  in `container.py`): the space comes back as fast as the engine deletes the layer (0.2-0.3 s
  after a 20 GB `fallocate` here), and the rollout ends as the agent's
  `SandboxLimitExceeded("storage")`, scored 0.

The guard: `reserve` refuses to start a sandbox (`SandboxError` kind `disk_space`,
infrastructure) when the data root's free space is below its cap plus what the engine's other
sandboxes may still write: this process's own, each its cap less what it wrote, and every
other running tbrl sandbox on the engine (another rank's, another run's, the `ray` backend's
other actors: found by their `LABEL_CAP` label), each its whole cap, since what it wrote is
not known here. A refusal is an infra error, so a run that asks for more than the disk holds
stops on training's infra-error rate with this message among its first errors.

Why a meter: the engine's `SizeRw` counts apparent sizes (a sparse file as its length, many
small files as nearly nothing) and no volumes; a walk inside tbrl needs root and a local
engine; the meter walks as cheaply wherever the engine is. What each costs, and what holding
storage costs a run: docs/benchmarks.md, "Storage limits".

Left out: inode counts (a million empty files cost no blocks); bind mounts the task asks
for (tbrl gives sandboxes none); volumes of other drivers than `local`; a check before a run
starts (preflight does not know the tasks' own caps).
"""

from __future__ import annotations

import atexit
import inspect
import json
import logging
import os
import secrets
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from docker.errors import DockerException
from docker.types import Mount

from tbrl_lib.docker import reaper
from tbrl_lib.docker.base_images import RUNTIME_SOURCE
from tbrl_lib.sandbox.backends.docker.hosts import _EXECUTOR, Host
from tbrl_lib.sandbox.base import SandboxError

log = logging.getLogger(__name__)

POLL_S = 0.5
"""How often every watched sandbox is measured, while the walks fit `BUDGET`."""
BUDGET = 0.25
"""The share of one core the meter's walks may take: a round of walks that takes longer
than `BUDGET * POLL_S` spaces the next round out to keep to it."""
FREE_FRESH_S = 5.0
"""A free-space reading this recent (the thread reads it every `POLL_S` while it measures)
is what a starting sandbox is weighed against; an older one is read again."""
ANSWER_S = 60.0
"""A meter that does not answer within this is restarted."""
MIB = 1 << 20
LABEL_CAP = "tbrl.storage_mb"
"""A sandbox container's storage cap, for the guard of every process on its engine."""
LABEL_ROLE = "tbrl.role"
ROLE = "storage-meter"


def blocks_under(paths: list[str], stop: int) -> int:
    """Bytes of the blocks under `paths` (`du`: st_blocks, hard links once, symlinks not
    followed), stopping once past `stop`. Stdlib only: its source is the meter's program."""
    total, seen, stack = 0, set(), []
    for path in paths:
        try:
            total += os.lstat(path).st_blocks * 512
        except OSError:
            continue
        stack.append(path)
    while stack and total <= stop:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if st.st_nlink > 1 and not is_dir:
                    if st.st_ino in seen:
                        continue
                    seen.add(st.st_ino)
                total += st.st_blocks * 512
                if is_dir:
                    stack.append(entry.path)
    return total


METER = (
    "import json, os, sys\n"
    + inspect.getsource(blocks_under)
    + """
root = sys.argv[1]
for line in sys.stdin:
    fs = os.statvfs(root)
    used = [blocks_under(paths, stop) for paths, stop in json.loads(line)]
    sys.stdout.write(json.dumps({"used": used, "free": fs.f_bavail * fs.f_frsize}) + "\\n")
    sys.stdout.flush()
"""
)
"""The meter's program: one JSON line in (`[[paths, stop bytes], ...]`), one out (`used`
bytes per entry, the data root's `free` bytes)."""


def writable_paths(info: dict) -> list[str] | None:
    """Where a container's writes land, from its `inspect`: the overlay upper directory and
    its read-write `local` volumes (an image's VOLUME). None when the driver shows no upper
    directory to measure."""
    upper = ((info.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir")
    if not upper:
        return None
    volumes = [
        m["Source"]
        for m in info.get("Mounts") or []
        if m.get("Type") == "volume" and m.get("RW") and m.get("Driver", "local") == "local"
    ]
    return [upper, *volumes]


@dataclass
class Watch:
    """One sandbox's reservation (`cap` bytes) and, once it runs, what it has written."""

    cap: int
    container: str | None = None
    paths: list[str] | None = None
    used: int = 0
    on_over: Callable[[int], None] | None = None


class _Meter:
    """The meter container and its attached stdin/stdout (blocking; the caller serialises)."""

    def __init__(self, host: Host) -> None:
        client = host.client
        self.root = client.info()["DockerRootDir"]
        mount = Mount(self.root, self.root, type="bind", read_only=True)
        mount["BindOptions"] = {"NonRecursive": True}
        api = client.api
        self.cid = api.create_container(
            RUNTIME_SOURCE,
            ["python3", "-I", "-S", "-u", "-c", METER, self.root],
            stdin_open=True,  # and StdinOnce: the meter ends when this process's socket closes
            labels={reaper.LABEL_OWNER: reaper.owner_label(), LABEL_ROLE: ROLE},
            host_config=api.create_host_config(
                auto_remove=True,
                network_mode="none",
                read_only=True,
                cap_drop=["ALL"],
                cap_add=["DAC_READ_SEARCH"],
                security_opt=["no-new-privileges"],
                mem_limit="256m",
                pids_limit=16,
                mounts=[mount],
            ),
        )["Id"]
        self._sdk_sock = api.attach_socket(
            self.cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        self._sock = getattr(self._sdk_sock, "_sock", self._sdk_sock)
        self._sock.settimeout(ANSWER_S)
        self._client = client
        api.start(self.cid)
        self._buf = b""

    def ask(self, watch: list[tuple[list[str], int]]) -> dict:
        self._sock.sendall((json.dumps(watch) + "\n").encode())
        errors = b""
        while b"\n" not in self._buf:
            header = self._read(8)
            kind, size = header[0], struct.unpack(">L", header[4:])[0]
            data = self._read(size)
            if kind == 2:
                errors += data
            else:
                self._buf += data
        if errors:
            log.warning("tbrl: storage meter %s: %s", self.cid[:12], errors.decode()[-500:])
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self._sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the storage meter's stream ended")
            out += chunk
        return out

    def close(self) -> None:
        """Close its stdin (it exits and the engine removes it); remove it too, to be sure."""
        for closer in (self._sock.close, self._sdk_sock.close):
            try:
                closer()
            except OSError:
                pass
        try:
            self._client.api.remove_container(self.cid, force=True)
        except (DockerException, OSError):
            pass  # already gone (auto-removed), or the engine is down (it auto-removes it)


class StorageMeter:
    """Every watched sandbox of one engine in this process (see module docstring)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.engine_key = host.engine_key
        self.watches: dict[str, Watch] = {}
        self.free: int | None = None
        """The data root's free bytes at the last answer."""
        self._free_at = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._io = threading.Lock()
        self._refresh = threading.Lock()
        self._meter: _Meter | None = None
        self._thread: threading.Thread | None = None

    @property
    def container_id(self) -> str | None:
        """The meter container's id (None before the first sandbox needs it)."""
        return self._meter.cid if self._meter else None

    # ------------------------------------------------------------------ the sandbox's side
    def reserve(self, cap_mb: int, origin: str) -> str:
        """Hold `cap_mb` for a sandbox about to start; its key. Blocking (the docker thread
        pool calls it). `SandboxError` kind `disk_space` when the engine's disk has less free
        space than this cap plus what this process's open sandboxes there may still write;
        `origin` names where the cap came from, for that message."""
        free = self._free_now()
        elsewhere = self._caps_elsewhere()
        cap = cap_mb * MIB
        with self._lock:
            mine = list(self.watches.values())
            left = sum(max(0, w.cap - w.used) for w in mine) + sum(elsewhere)
            if free < cap + left:
                raise SandboxError(
                    f"docker host {self.host.name} has {free / 2**30:.1f} GiB free on its "
                    f"data root ({self._meter.root if self._meter else '?'}), less than the "
                    f"{(cap + left) / 2**30:.1f} GiB its sandboxes may write: this one "
                    f"{cap_mb} MB ({origin}) and {len(mine) + len(elsewhere)} open with "
                    f"{left / 2**30:.1f} GiB of their caps left. Lower "
                    "sandbox.default_storage_mb (tasks that state no storage_mb) or the "
                    "sandboxes run at once, or free space on that disk",
                    kind="disk_space",
                )
            key = secrets.token_hex(8)
            self.watches[key] = Watch(cap)
        return key

    def _caps_elsewhere(self) -> list[int]:
        """The caps (bytes) of the engine's running tbrl sandboxes this process does not
        watch: `LABEL_CAP` of each."""
        running = self.host.client.api.containers(filters={"label": LABEL_CAP})
        with self._lock:
            mine = {w.container for w in self.watches.values()}
        return [
            int(c["Labels"][LABEL_CAP]) * MIB
            for c in running
            if c["Id"] not in mine and c["Labels"].get(LABEL_CAP, "").isdigit()
        ]

    def watch(
        self, key: str, container: str, paths: list[str], on_over: Callable[[int], None]
    ) -> None:
        """Measure the reserved sandbox `key` (its `container`) at `paths` from now on;
        `on_over(bytes)` is called once, from the meter's thread, when it has written past
        its cap."""
        with self._lock:
            entry = self.watches.get(key)
            if entry is None:
                return
            entry.container, entry.paths, entry.on_over = container, paths, on_over
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name=f"tbrl-storage-{self.host.name}", daemon=True
                )
                self._thread.start()
            self._wake.notify_all()

    def _free_now(self) -> int:
        """The data root's free bytes, read again only when the last reading is older than
        `FREE_FRESH_S` (and then by one of the sandboxes starting at once, not each)."""
        with self._refresh:
            if self.free is None or time.monotonic() - self._free_at >= FREE_FRESH_S:
                self._ask([])
            return self.free

    def release(self, key: str) -> int:
        """Stop measuring `key` and give its reservation back; what it had written."""
        with self._lock:
            entry = self.watches.pop(key, None)
        return entry.used if entry else 0

    def close(self, wait_s: float = -1) -> None:
        """Remove the meter container; give up after `wait_s` when a request holds it."""
        if not self._io.acquire(timeout=wait_s):
            return  # the engine removes it once this process's socket to it closes
        try:
            if self._meter is not None:
                self._meter.close()
                self._meter = None
        finally:
            self._io.release()

    # ------------------------------------------------------------------ the meter's side
    def _ask(self, watch: list[tuple[list[str], int]]) -> dict:
        """One answer of the meter, started (again) when it is not running."""
        with self._io:
            for attempt in (1, 2):
                try:
                    if self._meter is None:
                        self._meter = _Meter(self.host)
                    answer = self._meter.ask(watch)
                    break
                except (OSError, ConnectionError, DockerException, ValueError) as err:
                    if self._meter is not None:
                        self._meter.close()
                        self._meter = None
                    if attempt == 2:
                        raise SandboxError(
                            f"docker host {self.host.name}: the storage meter does not "
                            f"answer: {err}",
                            kind="meter_failed",
                        ) from err
        self.free, self._free_at = answer["free"], time.monotonic()
        return answer

    def _loop(self) -> None:
        """Measure every watched sandbox, then wait for the next round (`_until_next`)."""
        failing = False
        while True:
            with self._lock:
                while not any(w.paths for w in self.watches.values()):
                    self._wake.wait()
                keys = [k for k, w in self.watches.items() if w.paths]
                request = [(self.watches[k].paths, self.watches[k].cap) for k in keys]
            started = time.monotonic()
            try:
                answer = self._ask(request)
                self._settle(keys, answer["used"])
                self._until_next(started + max(POLL_S, (time.monotonic() - started) / BUDGET))
            except Exception as err:  # noqa: BLE001 - never lose the watch: say so, retry
                if not failing:
                    log.warning("tbrl: %s; retrying every %.1f s", err, 5 * POLL_S)
                failing = True
                time.sleep(5 * POLL_S)
                continue
            failing = False

    def _settle(self, keys: list[str], used: list[int]) -> None:
        """Record what each sandbox wrote; end those past their cap (once each)."""
        over = []
        with self._lock:
            for key, wrote in zip(keys, used, strict=True):
                entry = self.watches.get(key)
                if entry is None:
                    continue
                entry.used = wrote
                if wrote > entry.cap and entry.on_over is not None:
                    over.append((entry.on_over, wrote))
                    entry.on_over = None
        for on_over, wrote in over:
            _EXECUTOR.submit(on_over, wrote)

    def _until_next(self, when: float) -> None:
        """Wait until `when`, the next round; while walks are spaced out past `POLL_S`, read
        the disk's free space every `POLL_S` and go at once when it fell by more than the
        smallest room a sandbox has left (a fast writer in a sandbox with a large tree)."""
        free = self.free
        with self._lock:
            room = min((w.cap - w.used for w in self.watches.values() if w.paths), default=0)
        while (left := when - time.monotonic()) > 0:
            time.sleep(min(POLL_S, left))
            if time.monotonic() < when and free - self._ask([])["free"] > room:
                return


class SandboxStorage:
    """One sandbox's cap on its engine: reserved before its container exists (or refused),
    measured while it runs, given back when it is removed."""

    def __init__(self, host: Host, cap_mb: int, origin: str) -> None:
        self.meter = meter_for(host)
        self.cap_mb = cap_mb
        self.key = self.meter.reserve(cap_mb, origin)

    def watch(self, info: dict, quota: bool, on_over: Callable[[int], None]) -> str:
        """Measure the container `info` (its `inspect`) from now on; how the cap is held, in
        words (`limits_applied["storage"]`). `quota`: the driver took `--storage-opt size`."""
        held = ["the storage driver's quota on the writable layer"] if quota else []
        paths = writable_paths(info)
        if paths is None:
            self.release()
        else:
            self.meter.watch(self.key, info["Id"], paths, on_over)
            held.append(
                f"tbrl's storage meter (writable layer and volumes, every {POLL_S:g} s; the "
                "sandbox is removed past it)"
            )
        if not held:
            return (
                "not enforced: the storage driver neither takes --storage-opt size nor shows "
                "a writable layer to measure"
            )
        return f"{self.cap_mb} MB: " + ", and ".join(held)

    def release(self) -> int:
        """Give the reservation back; the bytes it had written at the last measurement."""
        return self.meter.release(self.key)


_METERS: dict[str, StorageMeter] = {}
_METERS_LOCK = threading.Lock()


@atexit.register
def close_meters() -> None:
    """At exit, remove this process's meters before it ends, not some time after (the
    engine's auto-remove), so a finished run leaves no container behind."""
    with _METERS_LOCK:
        meters = list(_METERS.values())
        _METERS.clear()
    for meter in meters:
        meter.close(wait_s=5)


def meter_for(host: Host) -> StorageMeter:
    """This process's meter of `host`'s engine."""
    with _METERS_LOCK:
        meter = _METERS.get(host.name)
        if meter is None or meter.host is not host or meter.engine_key != host.engine_key:
            if meter is not None:  # a closed connection: the address may lead elsewhere now
                meter.close(wait_s=0)
            meter = _METERS[host.name] = StorageMeter(host)
        return meter
