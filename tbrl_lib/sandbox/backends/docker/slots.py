"""A Docker host's declared capacity, shared by every process on this machine: one file per
slot, held by an exclusive `flock`.

    slots = SlotFiles("tcp://a:2375", capacity=128)
    slot = slots.take()        # a held slot (an open, locked file), or None when all are held
    slots.give_back(slot)

Why files and `flock`. `DockerHost.max_concurrency` is the most containers tbrl runs on a host;
counted per process, 24 training processes on one node could put 24 x 32 containers on a
host declared for 128. The slot files live in a directory per engine (`SLOTS_DIR`, or
`$TBRL_SLOTS_DIR`) that every process of the node sees; a slot is taken by locking one of its
`capacity` files without blocking. The kernel drops a `flock` when the last descriptor of its
open file closes, so a process that dies (`kill -9` included) gives its slots back at once, with
nothing to clean up. `flock` (not `fcntl` record locks) because its locks belong to the open
file, so two rollouts of one process cannot take the same slot. Counting the engine's
containers by label instead would race between the count and the create, and miss the
containers still being created.

Limits: the files are shared by one node's processes only (across machines the ray backend
places sandboxes, and Ray counts its units for the whole cluster). Processes
that declare different capacities for one engine share slots `0..min-1` and the larger
declaration wins beyond it. A child forked (not exec'd) while slots are held closes its copies
(`os.register_at_fork`), so it never keeps a slot alive after its parent gives it back.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

SLOTS_DIR = Path("/tmp/tbrl-slots")
ENV_VAR = "TBRL_SLOTS_DIR"
DEFAULT_ENGINE = "unix:///var/run/docker.sock"

_HELD: set[int] = set()
"""Descriptors of the slots this process holds (closed in forked children)."""
_HELD_LOCK = threading.Lock()


@dataclass(frozen=True)
class Slot:
    """One held slot: its index and the locked file's descriptor."""

    index: int
    fd: int


def engine_url(base_url: str | None) -> str:
    """The engine `base_url` names (None: `$DOCKER_HOST` or the default socket)."""
    return base_url or os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE


def slots_dir(base_url: str | None) -> Path:
    """The directory of the engine's slot files (created, open to every user of the node)."""
    root = Path(os.environ.get(ENV_VAR) or SLOTS_DIR)
    url = engine_url(base_url)
    path = root / hashlib.sha256(url.encode()).hexdigest()[:16]
    if not path.is_dir():
        for d in (root, path):
            try:
                d.mkdir(mode=0o1777, exist_ok=True)
                os.chmod(d, 0o1777)
            except PermissionError:  # made by another user: it is open to us already
                pass
        (path / "engine").write_text(url + "\n")  # which engine, for whoever looks
    return path


class SlotFiles:
    """The `capacity` slot files of one engine (see module doc)."""

    def __init__(self, base_url: str | None, capacity: int) -> None:
        self.base_url = base_url
        self.capacity = capacity
        self.dir = slots_dir(base_url)
        self._next = 0

    def take(self) -> Slot | None:
        """Lock a free slot without waiting; None when every slot is held (by any process)."""
        for step in range(self.capacity):
            index = (self._next + step) % self.capacity
            fd = os.open(self.dir / f"slot-{index}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue
                raise
            with _HELD_LOCK:
                _HELD.add(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who holds it, for whoever looks
            self._next = index + 1
            return Slot(index, fd)
        return None

    def give_back(self, slot: Slot) -> None:
        """Release `slot` (closing its file drops the lock)."""
        with _HELD_LOCK:
            _HELD.discard(slot.fd)
        os.close(slot.fd)

    def held(self) -> int:
        """How many of the slots some process holds now (a probe that tries each lock, so a
        `take` at the same instant may find that slot busy: for messages and tests)."""
        count = 0
        for index in range(self.capacity):
            path = self.dir / f"slot-{index}"
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                count += 1
            finally:
                os.close(fd)
        return count


def _close_in_child() -> None:
    global _HELD_LOCK
    _HELD_LOCK = threading.Lock()  # another thread may have held it at the fork
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)

__all__ = ["ENV_VAR", "SLOTS_DIR", "Slot", "SlotFiles", "engine_url", "slots_dir"]
