"""File transfer for `DockerSandbox`: tar over the Docker API, with size limits.

`write_file`/`write_files` upload one tar per target directory (`put_archive`), creating
missing parent directories with `mkdir -p` but never touching existing ones (a tar entry
for `/tmp` would reset its mode). `read_file`/`read_dir` stream `get_archive`, refuse
anything over `SandboxConfig.max_file_bytes` with `FileTooLarge` (or return a prefix when
the caller passes `max_bytes`). Relative paths resolve against the shell's current
directory. Left out: symlinks and special files in `read_dir` (regular files only).
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import time

from docker.errors import NotFound

from tbrl_lib.sandbox.base import FileTooLarge, SandboxError


class FileTransfer:
    """Mixin: needs `host`, `container_id`, `shell`, `config`, `task`, `stats`, `_check_open`."""

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else posixpath.join(self.shell.pwd, path)

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        data = content.encode() if isinstance(content, str) else bytes(content)
        await self.write_files({self._abs(path): data}, mode=mode)

    async def write_files(
        self, files: dict[str, str | bytes], dest: str = "/", mode: int = 0o644
    ) -> None:
        """Write several files in one tar upload; paths are relative to `dest` or absolute."""
        self._check_open()
        by_dir: dict[str, list[tuple[str, bytes]]] = {}
        total = 0
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else bytes(content)
            total += len(data)
            if len(data) > self.config.max_file_bytes:
                raise FileTooLarge(
                    f"{path}: {len(data)} bytes exceeds max_file_bytes="
                    f"{self.config.max_file_bytes} (raise SandboxConfig.max_file_bytes)"
                )
            full = posixpath.normpath(
                posixpath.join(dest, path) if not path.startswith("/") else path
            )
            by_dir.setdefault(posixpath.dirname(full), []).append((posixpath.basename(full), data))
        for directory, entries in by_dir.items():
            await self._put(directory, _tar(entries, mode))
        self.stats.bytes_written += total

    async def _put(self, directory: str, blob: bytes) -> None:
        api = self.host.client.api
        try:
            await self.host.call(
                api.put_archive, self.container_id, directory, blob, what="writing files"
            )
        except NotFound:
            await self._exec(["mkdir", "-p", directory])
            await self.host.call(
                api.put_archive, self.container_id, directory, blob, what="writing files"
            )

    async def _exec(self, argv: list[str]) -> None:
        def run():
            api = self.host.client.api
            eid = api.exec_create(self.container_id, argv)["Id"]
            out = api.exec_start(eid)
            code = api.exec_inspect(eid).get("ExitCode")
            if code:
                raise SandboxError(
                    f"{' '.join(argv)} failed ({code}): {out[-300:]!r}", kind="exec_failed"
                )

        await self.host.call(run, what=" ".join(argv))

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """The file's bytes; at most `max_bytes` when given, else up to `max_file_bytes`."""
        self._check_open()
        files = await self.read_dir(self._abs(path), max_bytes=max_bytes, single=True)
        return next(iter(files.values()))

    async def read_dir(
        self, path: str, max_bytes: int | None = None, single: bool = False
    ) -> dict[str, bytes]:
        """Every regular file under `path` (a file or directory), relative path -> bytes."""
        self._check_open()
        limit = max_bytes if max_bytes is not None else self.config.max_file_bytes

        def get():
            api = self.host.client.api
            try:
                stream, stat = api.get_archive(self.container_id, path)
            except NotFound as err:
                raise FileNotFoundError(
                    f"{path}: no such file in the sandbox (task {self.task.id})"
                ) from err
            if single and stat.get("mode", 0) & (1 << 31):
                raise IsADirectoryError(f"{path} is a directory; use read_dir")
            if max_bytes is None and stat.get("size", 0) > limit and single:
                raise FileTooLarge(
                    f"{path}: {stat['size']} bytes exceeds max_file_bytes={limit} "
                    "(pass max_bytes to read a prefix, or raise the limit)"
                )
            buf = io.BytesIO()
            for chunk in stream:
                buf.write(chunk)
                if buf.tell() > limit + (1 << 20):
                    if not (single and max_bytes is not None):
                        raise FileTooLarge(
                            f"{path}: more than {limit} bytes (raise "
                            "SandboxConfig.max_file_bytes or pass max_bytes)"
                        )
                    break  # a prefix was asked for and we have it
            buf.seek(0)
            return _untar(buf, limit, base=posixpath.basename(path.rstrip("/")), single=single)

        files = await self.host.call(get, what=f"reading {path}")
        self.stats.bytes_read += sum(len(v) for v in files.values())
        return files


def _tar(entries: list[tuple[str, bytes]], mode: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _untar(buf: io.BytesIO, limit: int, base: str, single: bool) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=buf, mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                continue
            handle = tar.extractfile(member)
            data = handle.read(min(limit, member.size)) if handle else b""
            name = member.name
            rel = name[len(base) + 1 :] if name.startswith(base + "/") else name
            out[rel] = data
            if single:
                break
    return out
