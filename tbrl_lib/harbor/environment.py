"""`HarborSandbox`: a Harbor environment behind tbrl's `Sandbox` protocol.

Harbor's `environment.exec(command, cwd, env, timeout_sec, user)` starts one `bash -c` per
call (`docker compose exec`), while tbrl's contract says the commands of one rollout share
a shell: `cd` and `export` persist. So each command runs as a script that first restores
the state the previous one left (`STATE_DIR/cwd`, `STATE_DIR/env`: `export -p`), runs the
command with `eval` in that shell, and on exit (also on `exit` or `set -e`) saves the
state again. What persists: the directory and exported variables. What does not (unlike
tbrl's own shell): functions, aliases, shell options and unexported variables; background
jobs outlive their command only when detached (`nohup ... &`, as under `docker exec`).

Limits, as tbrl's shell keeps them: a command's own timeout is enforced inside the
container by coreutils' `timeout` (TERM, then KILL 5 s later; Harbor's client-side timeout
is only a backstop), and its output is written to a file there, of which the first and the
last `max_output_bytes / 2` come back with tbrl's truncation notice, so a command that
prints a gigabyte costs no memory here. Files move through exec as base64 (small ones) or
Harbor's `upload_file` (large ones). Left out: `exec_isolated`, `put_archive` and tbrl's
read-only runtime: Harbor runs its own verifier (`tests/test.sh`), so nothing of tbrl's
verifier runs here, and calling them is a bug.
"""

from __future__ import annotations

import base64
import posixpath
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from tbrl_lib.sandbox import FileTooLarge
from tbrl_lib.sandbox.base import CommandResult, ExecResult, SandboxError, SandboxStats

STATE_DIR = "/tmp/.tbrl-shell"
KILL_AFTER_S = 5
BACKSTOP_S = 30
"""Harbor's own timeout on a call is the command's plus this (the `timeout` inside the
container normally ends it first)."""
INLINE_WRITE_BYTES = 48 * 1024
"""Files up to this size are written through one exec (base64 in the command line, under
Linux's 128 KiB limit per argument); larger ones through Harbor's `upload_file`."""


class HarborExec(Protocol):
    """What tbrl uses of `harbor.environments.base.BaseEnvironment` (duck-typed, so this
    module imports without Harbor)."""

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> Any: ...

    async def upload_file(self, source_path: Path | str, target_path: str) -> None: ...


def _script(cmd: str, workdir: str) -> str:
    """The inner script: restore cwd and exports, run `cmd` with eval, save them on exit."""
    return (
        f"S={STATE_DIR}\n"
        f'cd "$(cat "$S/cwd" 2>/dev/null || echo {shlex.quote(workdir)})" 2>/dev/null\n'
        '. "$S/env" 2>/dev/null\n'
        'trap \'export -p > "$S/env"; pwd > "$S/cwd"\' EXIT\n'
        f"eval {shlex.quote(cmd)}\n"
    )


def _wrapped(cmd: str, workdir: str, timeout: float, cap: int) -> str:
    """The command Harbor runs: the script under `timeout`, output to a file, then its size
    and the head and tail of it (at most `cap` bytes), then the exit code."""
    half = cap // 2
    return (
        f"mkdir -p {STATE_DIR} && cd / && "
        f"timeout -k {KILL_AFTER_S} {max(timeout, 0.1):.1f} bash -c {shlex.quote(_script(cmd, workdir))} "
        f"</dev/null >{STATE_DIR}/out 2>&1; rc=$?; n=$(stat -c %s {STATE_DIR}/out); "
        f'printf "%s\\n" "$n"; if [ "$n" -le {cap} ]; then cat {STATE_DIR}/out; '
        f"else head -c {half} {STATE_DIR}/out; tail -c {cap - half} {STATE_DIR}/out; fi; "
        "exit $rc"
    )


class HarborSandbox:
    """One Harbor trial's environment as a tbrl `Sandbox` (see the module docstring)."""

    runtime_dir = ""

    def __init__(
        self,
        environment: HarborExec,
        workdir: str = "/app",
        max_output_bytes: int = 64 * 1024,
        max_file_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.environment = environment
        self.workdir = workdir
        self.max_output_bytes = max_output_bytes
        self.max_file_bytes = max_file_bytes
        self.stats = SandboxStats()

    async def __aenter__(self) -> HarborSandbox:
        t0 = time.monotonic()
        setup = (
            f"mkdir -p {STATE_DIR} {shlex.quote(self.workdir)} && cd {shlex.quote(self.workdir)} "
            f"&& export -p > {STATE_DIR}/env && pwd > {STATE_DIR}/cwd"
        )
        await self._exec(setup, timeout=60, what="preparing the shell state")
        self.stats.startup_seconds = time.monotonic() - t0
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None  # Harbor owns the container: it stops it after the verifier

    async def _exec(self, command: str, timeout: float, what: str) -> Any:
        try:
            result = await self.environment.exec(command, timeout_sec=int(timeout) + BACKSTOP_S)
        except RuntimeError as err:  # Harbor's backstop timeout, or compose failing
            raise SandboxError(f"Harbor's exec failed while {what}: {err}", "infra") from err
        return result

    async def run(self, cmd: str, timeout: float | None = None) -> CommandResult:
        timeout = 180.0 if timeout is None else timeout
        t0 = time.monotonic()
        result = await self._exec(
            _wrapped(cmd, self.workdir, timeout, self.max_output_bytes),
            timeout,
            "running a command",
        )
        duration = time.monotonic() - t0
        size_line, _, body = (result.stdout or "").partition("\n")
        if not size_line.strip().isdigit():  # the wrapper itself did not run: the engine's fault
            raise SandboxError(
                f"Harbor's exec returned no output size (exit {result.return_code}): "
                f"{(result.stdout or '')[-300:]!r}",
                "shell_failed",
            )
        size = int(size_line)
        dropped = max(size - self.max_output_bytes, 0)
        if dropped:
            half = self.max_output_bytes // 2
            encoded = body.encode()
            head, tail = encoded[:half], encoded[half:]
            body = (
                head
                + (
                    f"\n[... tbrl: {dropped} bytes of output omitted; kept the first "
                    f"{len(head)} and last {len(tail)} bytes ...]\n"
                ).encode()
                + tail
            ).decode(errors="replace")
        code = result.return_code
        timed_out = code in (124, 137) and duration >= timeout
        self.stats.commands += 1
        self.stats.command_seconds += duration
        self.stats.bytes_out += size
        return CommandResult(
            exit_code=None if timed_out else code,
            output=body,
            timed_out=timed_out,
            truncated_bytes=dropped,
            duration_s=duration,
        )

    async def _abs(self, path: str) -> str:
        if path.startswith("/"):
            return path
        cwd = await self._exec(f"cat {STATE_DIR}/cwd", 30, "reading the shell's directory")
        return posixpath.join((cwd.stdout or self.workdir).strip() or self.workdir, path)

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        data = content.encode() if isinstance(content, str) else bytes(content)
        if len(data) > self.max_file_bytes:
            raise FileTooLarge(
                f"{path}: {len(data)} bytes exceeds max_file_bytes={self.max_file_bytes}"
            )
        target = await self._abs(path)
        quoted, parent = shlex.quote(target), shlex.quote(posixpath.dirname(target) or "/")
        if len(data) <= INLINE_WRITE_BYTES:
            blob = base64.b64encode(data).decode()
            command = f"mkdir -p {parent} && printf %s {blob} | base64 -d > {quoted}"
        else:
            await self._checked(f"mkdir -p {parent}", f"writing {target}")
            with tempfile.NamedTemporaryFile() as tmp:
                tmp.write(data)
                tmp.flush()
                await self.environment.upload_file(tmp.name, target)
            command = "true"
        await self._checked(f"{command} && chmod {mode:o} {quoted}", f"writing {target}")
        self.stats.bytes_written += len(data)

    async def _checked(self, command: str, what: str) -> str:
        result = await self._exec(command, 60, what)
        if result.return_code != 0:
            raise SandboxError(
                f"{what} failed ({result.return_code}): {(result.stdout or '')[-300:]}",
                "exec_failed",
            )
        return result.stdout or ""

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        target = await self._abs(path)
        quoted = shlex.quote(target)
        limit = self.max_file_bytes if max_bytes is None else max_bytes
        result = await self._exec(
            f"if [ -d {quoted} ]; then echo dir; elif [ ! -e {quoted} ]; then echo missing; "
            f"else stat -c %s {quoted} && head -c {limit} {quoted} | base64 -w0; fi",
            60,
            f"reading {target}",
        )
        first, _, blob = (result.stdout or "").partition("\n")
        if first == "dir":
            raise IsADirectoryError(f"{target} is a directory; use read_dir")
        if first == "missing":
            raise FileNotFoundError(f"{target}: no such file in the sandbox")
        if not first.isdigit():
            raise SandboxError(
                f"reading {target} failed: {(result.stdout or '')[-300:]}", "exec_failed"
            )
        if max_bytes is None and int(first) > limit:
            raise FileTooLarge(
                f"{target}: {first} bytes exceeds max_file_bytes={limit} "
                "(pass max_bytes to read a prefix, or raise the limit)"
            )
        data = base64.b64decode(blob.strip())
        self.stats.bytes_read += len(data)
        return data

    async def exec_isolated(self, argv, *, env, timeout, user="0:0", workdir="/") -> ExecResult:
        raise NotImplementedError("Harbor runs its own verifier; tbrl's is not used inside Harbor")

    async def put_archive(self, path: str, tar: bytes) -> None:
        raise NotImplementedError("Harbor runs its own verifier; tbrl's is not used inside Harbor")
