"""The persistent shell: one long-lived `bash` per rollout, driven over an exec socket.

How a command runs. The driver sends one line to bash's stdin:

    __tbrl_c='<command, single-quote escaped>'; __tbrl_run; __tbrl_e=$?; <read pids_max>
    { printf '\\n%s%s %d %d %s %s\\n' A B "$__tbrl_e" "$$" "$pids_max" "$PWD"; jobs -p;
      printf '%s%s\\n' B A; } >&87

`__tbrl_run` is a function doing `eval "$__tbrl_c" </dev/null` in the shell itself, so
`cd`, `export`, functions and aliases persist (a bare `declare`/`local` inside a command
is local to that function: use `declare -g` or plain assignment to keep a variable). stdin
is /dev/null, so a command that reads input gets EOF instead of eating the next command.
The trailer goes to fd 87 (a copy of the original stdout made at start), so `exec >file`
in a command cannot swallow it; its markers are random halves A, B printed as separate
arguments, so even `set -x` output can never contain the joined marker. stderr is merged
into stdout at start (`exec 2>&1`), so output arrives in order through one pipe.

Timeouts. The shell runs with job control (`set -m`): each pipeline gets its own process
group, and `jobs -p` in each trailer tells the driver which groups are background jobs
(`&`, `nohup`) that must survive. On a timeout, a one-off `docker exec` walks /proc (bash
builtins only, so it works in any image with bash) and SIGKILLs every descendant of the
shell, and their process groups, except the background groups: the command's whole tree
dies (also double-forked children that kept the group), the shell lives on and prints
its trailer. The killer first sends the shell SIGUSR1, whose trap `return`s from
`__tbrl_run`, so the rest of the command line (`sleep 1000; rm -rf x`, loop iterations)
does not run on after the kill, and a busy builtin loop is interrupted too. If the shell
still does not answer (it replaced the trap), it is killed and restarted in the last
known directory; variables and functions are then lost, and the output says so. The
same restart happens when a command `exit`s (seen through an EXIT trap) or `exec`s.

Limits. `$pids_max` is the pids cgroup's count of forks refused at the limit, read with
builtins before each trailer; when it grows, `pids_limit_hits` grows and the sandbox ends
the rollout as a `pids` limit (a fork bomb can burn out between two commands, so its
traces, not the live process count, are what is checked).

Output. Bytes are streamed off the socket and capped as they arrive: the first and last
`cap/2` bytes are kept, the middle is counted and dropped, so `yes` or a 1 GB print keeps
the driver's memory flat (the command's own timeout bounds how long it can stream).
Bytes are decoded as UTF-8 with replacement, so binary output is safe. Output that
background jobs print between commands is shown with the next command's output, as in a
terminal. Background jobs never block the shell: framing uses markers, not EOF.

Threads. Over unix:// and tcp:// the hijacked socket is adopted by asyncio, so an idle
rollout holds no thread; TLS and ssh:// transports fall back to one blocking read per
pending command on the docker thread pool.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import struct
import time
from dataclasses import dataclass

from docker.errors import DockerException

from tbrl_lib.sandbox.backends.docker.hosts import _EXECUTOR, Host
from tbrl_lib.sandbox.base import CommandResult, SandboxError

TRAILER_FD = 87
PIDS_EVENTS_READ = (
    "__tbrl_pm=; { read -r _ __tbrl_pm < /sys/fs/cgroup/pids/pids.events || "
    "read -r _ __tbrl_pm < /sys/fs/cgroup/pids.events; } 2>/dev/null;"
)
"""Builtins only (no fork, so it works with the pids limit exhausted): cgroup v1, then v2."""
READ_CHUNK = 1 << 18
KILL_ROUNDS = 3
"""Kill rounds before giving up on the shell and restarting it."""
KILL_GRACE_S = 1.0
"""After killing a timed-out command's tree, how long the shell gets to print its trailer."""

KILL_TREE = r"""
sh=$1; shift; n=0
declare -A keep=(); for g in "$@"; do keep[$g]=1; done
kill -USR1 "$sh" 2>/dev/null
for pass in 1 2; do
  declare -A par=() grp=()
  for d in /proc/[0-9]*; do
    p=${d#/proc/}; read -r s < "$d/stat" 2>/dev/null || continue
    s=${s##*) }; f=($s); par[$p]=${f[1]}; grp[$p]=${f[2]}
  done
  declare -A desc=([$sh]=1); changed=1
  while ((changed)); do changed=0
    for p in "${!par[@]}"; do
      if [[ -z ${desc[$p]} && -n ${desc[${par[$p]}]} ]]; then desc[$p]=1; changed=1; fi
    done
  done
  unset "desc[$sh]"
  declare -A groups=()
  for p in "${!desc[@]}"; do
    g=${grp[$p]}; [[ -n ${keep[$g]} ]] && continue
    kill -9 "$p" 2>/dev/null && n=$((n+1)); [[ $g != "${grp[$sh]}" ]] && groups[$g]=1
  done
  for g in "${!groups[@]}"; do kill -9 -- "-$g" 2>/dev/null; done
  unset par grp desc groups
done
echo "$n"
"""
"""Tell shell pid $1 to abandon its command (USR1 trap: `return`), then SIGKILL every
descendant (and their groups) except background job groups $2...; prints the kill count."""


class _Transport:
    """Byte stream to the exec: asyncio-native when the socket is a plain one."""

    def __init__(self, sdk_sock) -> None:
        self._sdk_sock = sdk_sock  # keeps the HTTP response (and TLS) alive
        raw = getattr(sdk_sock, "_sock", sdk_sock)
        self._raw = raw
        self.native = isinstance(raw, socket.socket) and type(raw) is socket.socket
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        if not self.native:
            self._raw.settimeout(None)  # the SDK leaves its request timeout on the socket
        else:
            self._raw.setblocking(False)
            self.reader, self.writer = await asyncio.open_connection(sock=self._raw, limit=1 << 20)

    async def read(self, n: int) -> bytes:
        if self.native:
            return await self.reader.read(n)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_EXECUTOR, self._raw.recv, n)

    async def write(self, data: bytes) -> None:
        if self.native:
            self.writer.write(data)
            await self.writer.drain()
        else:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(_EXECUTOR, self._raw.sendall, data)

    def close(self) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
            else:
                self._raw.close()
            self._sdk_sock.close()
        except OSError as err:
            logging.getLogger(__name__).debug("closing the shell socket: %s", err)


class _Capture:
    """Head + tail of a byte stream; the middle is counted, not kept."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data[-self.tail_cap :] if len(data) > self.tail_cap else data
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - min(len(self.tail), self.tail_cap)

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail else b""
        if self.dropped > 0:
            notice = (
                f"\n[... tbrl: {self.dropped} bytes of output omitted; kept the first "
                f"{len(self.head)} and last {len(tail)} bytes ...]\n"
            ).encode()
            return (bytes(self.head) + notice + tail).decode("utf-8", errors="replace")
        return (bytes(self.head) + tail).decode("utf-8", errors="replace")


@dataclass
class _Trailer:
    exit_code: int
    shell_pid: int
    pwd: str
    jobs: list[str]
    exited: bool = False
    pids_max_events: int | None = None
    """The pids cgroup's `max` event count (forks refused at the limit); None if unreadable."""
    """Printed by the EXIT trap: the shell is gone (the command ran `exit`, or `set -e`)."""


class ShellExited(Exception):
    """The exec stream ended: bash exited or was killed."""


class PersistentShell:
    """One bash process inside a container; `run()` one command at a time."""

    def __init__(self, host: Host, container_id: str, workdir: str, cap: int) -> None:
        self.host = host
        self.container_id = container_id
        self.cap = cap
        self.pwd = workdir
        self.shell_pid: int | None = None
        self.bg_groups: list[str] = []
        self.exec_id: str | None = None
        self._t: _Transport | None = None
        self._a = secrets.token_hex(8)
        self._b = secrets.token_hex(8)
        self._start = ("\n" + self._a + self._b).encode()
        self._end = (self._b + self._a + "\n").encode()
        self._frame_left = 0
        self._header = b""
        self._pending = b""  # bytes read past the last trailer (background output)
        self._lock = asyncio.Lock()
        self.bytes_out = 0
        self.pids_limit_hits = 0
        """Forks refused by the container's pids limit, seen in trailers since start."""
        self._pids_events: int | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        def open_exec():
            api = self.host.client.api
            exec_id = api.exec_create(
                self.container_id,
                ["bash", "--noprofile", "--norc"],
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
            )["Id"]
            return exec_id, api.exec_start(exec_id, socket=True)

        self.exec_id, sdk_sock = await self.host.call(open_exec, what="starting the shell")
        self._t = _Transport(sdk_sock)
        await self._t.open()
        self._frame_left, self._header, self._pending = 0, b"", b""
        q = _quote(self.pwd)
        a, b = self._a, self._b
        on_exit = (
            f"__tbrl_e=$?; {{ printf '\\n%s%s %d -%d - %s\\n' {a} {b} \"$__tbrl_e\" "
            f'"$$" "$PWD"; printf \'%s%s\\n\' {b} {a}; }} >&{TRAILER_FD}'
        )
        setup = (
            f"exec 2>&1 {TRAILER_FD}>&1; set -m; trap {_quote(on_exit)} EXIT; "
            "trap '[[ -n $__tbrl_b ]] && return 137' USR1; "
            '__tbrl_run() { __tbrl_b=1; eval "$__tbrl_c" </dev/null; }; '
            f"cd {q} 2>/dev/null || {{ mkdir -p {q} && cd {q}; }}; __tbrl_e=0; "
            + self._trailer_cmd()
        )
        await self._t.write(setup.encode())
        capture = _Capture(self.cap)
        try:
            trailer = await asyncio.wait_for(self._read_until_trailer(capture), 30)
        except ShellExited as err:
            raise SandboxError(
                f"bash did not start in container {self.container_id[:12]}: "
                f"{capture.text().strip()[-500:] or 'no output'} (does the image have bash?)",
                kind="shell_failed",
            ) from err
        except TimeoutError as err:
            raise SandboxError("the shell did not answer within 30 s", kind="shell_failed") from err
        self._apply(trailer)

    def close(self) -> None:
        if self._t is not None:
            self._t.close()
            self._t = None

    def _trailer_cmd(self) -> str:
        a, b = self._a, self._b
        return (
            f"{PIDS_EVENTS_READ} {{ printf '\\n%s%s %d %d %s %s\\n' {a} {b} \"$__tbrl_e\" "
            f'"$$" "${{__tbrl_pm:--}}" "$PWD"; '
            f"jobs -p; printf '%s%s\\n' {b} {a}; }} >&{TRAILER_FD}\n"
        )

    def _apply(self, trailer: _Trailer) -> None:
        if trailer.pids_max_events is not None:
            if self._pids_events is not None and trailer.pids_max_events > self._pids_events:
                self.pids_limit_hits += trailer.pids_max_events - self._pids_events
            self._pids_events = trailer.pids_max_events
        self.shell_pid = trailer.shell_pid
        self.pwd = trailer.pwd or self.pwd
        self.bg_groups = trailer.jobs

    # ------------------------------------------------------------------ commands
    async def run(self, cmd: str, timeout: float, before_kill=None) -> CommandResult:
        """Run `cmd`; on timeout await `before_kill()` (it may raise) then kill the tree."""
        async with self._lock:
            return await self._run(cmd, timeout, before_kill)

    async def _run(self, cmd: str, timeout: float, before_kill) -> CommandResult:
        if self._t is None:
            await self.start()
        started = time.monotonic()
        line = (
            f"__tbrl_c={_quote(cmd.replace(chr(0), ''))}; __tbrl_run; "
            f"__tbrl_e=$? __tbrl_b=; " + self._trailer_cmd()
        )
        capture = _Capture(self.cap)
        capture.add(self._pending)
        self._pending = b""
        notice = ""
        reading = None
        try:
            try:
                await self._t.write(line.encode("utf-8", errors="surrogateescape"))
            except (ConnectionError, OSError) as err:
                raise ShellExited() from err
            reading = asyncio.ensure_future(self._read_until_trailer(capture))
            done, _ = await asyncio.wait({reading}, timeout=timeout)
            if reading in done:
                trailer = reading.result()
                if trailer.exited:
                    await self._restart(kill=False)
                    return CommandResult(
                        trailer.exit_code,
                        capture.text()
                        + self._restart_notice(f"the shell exited (code {trailer.exit_code})"),
                        False,
                        max(0, capture.dropped),
                        time.monotonic() - started,
                    )
                self._apply(trailer)
                return CommandResult(
                    trailer.exit_code,
                    capture.text(),
                    False,
                    max(0, capture.dropped),
                    time.monotonic() - started,
                )
            if before_kill is not None:
                await before_kill()
            for attempt in range(KILL_ROUNDS):
                killed = await self.kill_running()
                done, _ = await asyncio.wait(
                    {reading}, timeout=KILL_GRACE_S if killed else 0.2 * (attempt + 1)
                )
                if reading in done:
                    break
            if reading in done and not reading.result().exited:
                self._apply(reading.result())
            else:
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
                await self._restart(kill=True)
                notice = self._restart_notice("the shell did not stop after the timeout")
            return CommandResult(
                None,
                capture.text()
                + f"\n[tbrl: command timed out after {timeout:g}s and was killed]"
                + notice,
                True,
                max(0, capture.dropped),
                time.monotonic() - started,
            )
        except ShellExited:
            code = await self._exec_exit_code()
            await self._restart(kill=False)
            return CommandResult(
                code,
                capture.text() + self._restart_notice(f"the shell exited (code {code})"),
                False,
                max(0, capture.dropped),
                time.monotonic() - started,
            )
        finally:
            if reading is not None and not reading.done():
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)

    def _restart_notice(self, why: str) -> str:
        return (
            f"\n[tbrl: {why}; a new shell was started in {self.pwd}; shell variables and "
            "functions set earlier are gone]"
        )

    async def kill_running(self) -> int:
        """SIGKILL the running command's process tree (not the shell, not background jobs).

        Returns how many processes were killed (0: the shell itself is busy)."""

        def kill() -> int:
            api = self.host.client.api
            eid = api.exec_create(
                self.container_id,
                ["bash", "-c", KILL_TREE, "tbrl-kill", str(self.shell_pid), *self.bg_groups],
            )["Id"]
            out = api.exec_start(eid).decode(errors="replace").split()
            return int(out[-1]) if out and out[-1].isdigit() else 1

        return await self.host.call(kill, what="killing a timed-out command")

    async def _restart(self, kill: bool) -> None:
        pid = self.shell_pid
        self.close()
        if pid and kill:

            def kill_shell():
                api = self.host.client.api
                eid = api.exec_create(self.container_id, ["kill", "-9", str(pid)])["Id"]
                api.exec_start(eid)

            try:
                await self.host.call(kill_shell, what="killing a stuck shell")
            except DockerException as err:  # the shell is already gone
                logging.getLogger(__name__).debug("killing shell %s: %s", pid, err)
        await self.start()

    async def _exec_exit_code(self) -> int | None:
        if self.exec_id is None:
            return None
        info = await self.host.call(
            self.host.client.api.exec_inspect, self.exec_id, what="inspecting the shell"
        )
        return info.get("ExitCode")

    # ------------------------------------------------------------------ stream parsing
    async def _read_until_trailer(self, capture: _Capture) -> _Trailer:
        """Feed output into `capture` until this command's trailer; keep what follows."""
        keep = len(self._start) - 1
        window = b""
        trailer_buf: bytearray | None = None
        while True:
            data = await self._read_payload()
            if trailer_buf is None:
                buf = window + data
                idx = buf.find(self._start)
                if idx < 0:
                    cut = max(0, len(buf) - keep)
                    capture.add(buf[:cut])
                    window = buf[cut:]
                    continue
                capture.add(buf[:idx])
                trailer_buf = bytearray(buf[idx + len(self._start) :])
            else:
                trailer_buf += data
            end = trailer_buf.find(self._end)
            if end >= 0:
                self._pending = bytes(trailer_buf[end + len(self._end) :])
                return _parse_trailer(bytes(trailer_buf[:end]))
            if len(trailer_buf) > 1 << 20:
                raise SandboxError("shell trailer is garbled (over 1 MiB)", kind="shell_failed")

    async def _read_payload(self) -> bytes:
        """Next payload bytes from the multiplexed exec stream (8-byte frame headers stripped).

        Reads up to `READ_CHUNK` at a time and unpacks every whole frame in it at once, so
        a flood of small frames costs one await per chunk, not two per frame."""
        while True:
            raw = await self._read_raw(READ_CHUNK)
            if not raw:
                raise ShellExited()
            self.bytes_out += len(raw)
            buf = self._header + raw if self._header else raw
            self._header = b""
            out = bytearray()
            pos, size = 0, len(buf)
            while pos < size:
                if self._frame_left == 0:
                    if size - pos < 8:
                        self._header = bytes(buf[pos:])
                        break
                    self._frame_left = struct.unpack_from(">L", buf, pos + 4)[0]
                    pos += 8
                    continue
                take = min(self._frame_left, size - pos)
                out += buf[pos : pos + take]
                pos += take
                self._frame_left -= take
            if out:
                return bytes(out)

    async def _read_raw(self, n: int) -> bytes:
        if self._t is None:
            raise ShellExited()
        try:
            return await self._t.read(n)
        except (ConnectionError, OSError):
            return b""


def _parse_trailer(raw: bytes) -> _Trailer:
    text = raw.decode("utf-8", errors="replace")
    first, _, rest = text.partition("\n")
    parts = first.lstrip(" ").split(" ", 3)
    try:
        code, pid = int(parts[0]), int(parts[1])
    except (ValueError, IndexError) as err:
        raise SandboxError(f"garbled shell trailer {first[:200]!r}", kind="shell_failed") from err
    pids_max = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
    pwd = parts[3] if len(parts) > 3 else ""
    jobs = [j for j in rest.split() if j.isdigit()]
    return _Trailer(code, abs(pid), pwd, jobs, exited=pid < 0, pids_max_events=pids_max)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
