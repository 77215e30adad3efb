"""The `file` tool: read with line numbers, write, exact-string edit, atomic multi_edit,
metadata. Contents move with `Sandbox.read_file`/`write_file`; paths are resolved in the
persistent shell, so a relative path means the same thing as in `<bash>`.

Edits are exact string replacements: no match is an error, several matches are an error
unless `replace_all`, and `multi_edit` writes nothing unless every edit applies. Left out:
binary files (refused with a hint to use bash), encodings other than UTF-8.
"""

from __future__ import annotations

import difflib
import posixpath

from tbrl_lib.agent.actions import (
    EditSpec,
    FileEdit,
    FileMetadata,
    FileMultiEdit,
    FileRead,
    FileWrite,
)
from tbrl_lib.agent.config import ToolConfig
from tbrl_lib.agent.tool_base import PathInfo, ToolError, probe, q
from tbrl_lib.sandbox.base import Sandbox


class FileTool:
    tag = "file"

    def __init__(self, sandbox: Sandbox, config: ToolConfig) -> None:
        self.sandbox = sandbox
        self.config = config

    async def __call__(
        self, action: FileRead | FileWrite | FileEdit | FileMultiEdit | FileMetadata
    ) -> str:
        if isinstance(action, FileRead):
            return await self.read(action)
        if isinstance(action, FileWrite):
            return await self.write(action)
        if isinstance(action, FileEdit):
            return await self.edit(
                action.file_path,
                [
                    EditSpec(
                        old_string=action.old_string,
                        new_string=action.new_string,
                        replace_all=action.replace_all,
                    )
                ],
            )
        if isinstance(action, FileMultiEdit):
            return await self.edit(action.file_path, list(action.edits))
        return await self.metadata(action)

    async def read(self, action: FileRead) -> str:
        info, text = await self._load(action.file_path)
        if not text:
            return f"{info.path} is empty"
        lines = _lines(text)
        first = max(action.offset, 1)
        count = action.limit or self.config.read_default_limit
        if first > len(lines):
            raise ToolError(f"offset {first} is past the end of {info.path} ({len(lines)} lines)")
        shown = lines[first - 1 : first - 1 + count]
        width = self.config.read_max_line_chars
        body = "\n".join(
            f"{n:6d}\t{_cut(line, width)}" for n, line in enumerate(shown, start=first)
        )
        last = first + len(shown) - 1
        if last < len(lines):
            body += f"\n[showing lines {first}-{last} of {len(lines)}; continue with offset: {last + 1}]"
        return body

    async def write(self, action: FileWrite) -> str:
        info = await probe(self.sandbox, action.file_path)
        if info.kind == "directory":
            raise ToolError(f"{info.path} is a directory; give a file path")
        made = await self.sandbox.run(f"mkdir -p -- {q(posixpath.dirname(info.path))}", timeout=30)
        if not made.ok:
            raise ToolError(
                f"cannot create the directory for {info.path}: {made.output.strip()[:300]}"
            )
        mode = info.mode if info.kind == "file" else 0o644
        await self.sandbox.write_file(info.path, action.content, mode=mode)
        n_lines = action.content.count("\n") + (
            0 if action.content.endswith("\n") or not action.content else 1
        )
        verb = "Replaced" if info.kind == "file" else "Created"
        return f"{verb} {info.path} ({len(action.content.encode()):,} bytes, {n_lines} lines)"

    async def edit(self, file_path: str, edits: list[EditSpec]) -> str:
        info, text = await self._load(file_path)
        new_text = text
        counts: list[int] = []
        for n, spec in enumerate(edits, start=1):
            label = f"edit {n} of {len(edits)}: " if len(edits) > 1 else ""
            found = new_text.count(spec.old_string)
            if found == 0:
                hint = _closest(new_text, spec.old_string)
                raise ToolError(
                    f"{label}old_string was not found in {info.path}{hint}"
                    + (
                        "; no edit was written (multi_edit is all or nothing)"
                        if len(edits) > 1
                        else ""
                    )
                )
            if found > 1 and not spec.replace_all:
                where = _match_lines(new_text, spec.old_string)
                raise ToolError(
                    f"{label}old_string occurs {found} times in {info.path} (lines {where}); "
                    "include more surrounding text to make it unique, or set replace_all: true"
                    + ("; no edit was written" if len(edits) > 1 else "")
                )
            new_text = new_text.replace(spec.old_string, spec.new_string)
            counts.append(found)
        await self.sandbox.write_file(info.path, new_text, mode=info.mode)
        first_line = _first_changed_line(text, new_text)
        total = sum(counts)
        summary = (
            f"Edited {info.path}: {len(edits)} edit(s), {total} replacement(s)"
            if len(edits) > 1
            else f"Edited {info.path}: replaced {total} occurrence(s)"
        )
        return summary + "\n" + _snippet(new_text, first_line)

    async def metadata(self, action: FileMetadata) -> str:
        limit = self.config.metadata_max_paths
        if len(action.file_paths) > limit:
            raise ToolError(
                f"metadata takes at most {limit} paths; you gave {len(action.file_paths)}"
            )
        script = "; ".join(
            f"stat -c '%n|%F|%s|%a|%A|%U:%G|%y' -- {q(path)} 2>/dev/null || echo {q(path)}'|missing'"
            for path in action.file_paths
        )
        result = await self.sandbox.run(script, timeout=self.config.search_timeout)
        blocks = []
        for line in result.output.strip("\n").split("\n"):
            parts = line.split("|")
            if len(parts) == 2:
                blocks.append(f"{parts[0]}: not found")
            elif len(parts) >= 7:
                name, kind, size, octal, symbolic, owner, mtime = parts[:7]
                blocks.append(
                    f"{name}:\n  Type: {kind}\n  Size: {int(size):,} bytes\n  Permissions: {octal} "
                    f"({symbolic})\n  Owner: {owner}\n  Modified: {mtime.split('.')[0]}"
                )
        return "\n\n".join(blocks) or result.output

    async def _load(self, file_path: str) -> tuple[PathInfo, str]:
        info = await probe(self.sandbox, file_path)
        if info.kind == "missing":
            raise ToolError(f"File not found: {info.path}")
        if info.kind != "file":
            raise ToolError(
                f"{info.path} is a {info.kind}, not a regular file"
                + (" (list it with <search> action: ls)" if info.kind == "directory" else "")
            )
        if info.size > self.config.read_max_bytes:
            raise ToolError(
                f"{info.path} has {info.size:,} bytes, more than {self.config.read_max_bytes:,}; "
                "use bash (head, sed -n 'A,Bp', grep) for large files"
            )
        data = await self.sandbox.read_file(info.path, max_bytes=self.config.read_max_bytes)
        if b"\0" in data[:8192]:
            raise ToolError(
                f"{info.path} looks binary ({len(data):,} bytes); inspect it with bash (xxd | head, file)"
            )
        try:
            return info, data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(
                f"{info.path} is not UTF-8 text ({exc.reason} at byte {exc.start}); use bash"
            ) from exc


def _lines(text: str) -> list[str]:
    """Lines as `wc -l`/`sed -n` count them (only \\n separates lines)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _cut(line: str, width: int) -> str:
    return (
        line
        if len(line) <= width
        else line[:width] + f" [... {len(line) - width:,} more characters]"
    )


def _match_lines(text: str, needle: str, limit: int = 10) -> str:
    lines, start = [], 0
    while (at := text.find(needle, start)) != -1 and len(lines) < limit:
        lines.append(str(text.count("\n", 0, at) + 1))
        start = at + 1
    return ", ".join(lines)


def _closest(text: str, needle: str) -> str:
    first = needle.strip("\n").split("\n")[0].strip()
    candidates = [line.strip() for line in _lines(text) if line.strip()]
    close = difflib.get_close_matches(first, candidates, n=1, cutoff=0.6)
    if not close:
        return " (check spelling, whitespace and indentation; read the file first)"
    line_no = next(n for n, line in enumerate(_lines(text), start=1) if line.strip() == close[0])
    return f"; the closest line is {line_no}: {close[0][:200]!r} (whitespace and indentation must match exactly)"


def _first_changed_line(old: str, new: str) -> int:
    for n, (a, b) in enumerate(zip(_lines(old), _lines(new)), start=1):
        if a != b:
            return n
    return min(len(_lines(old)), len(_lines(new))) + 1


def _snippet(text: str, around: int, context: int = 3) -> str:
    lines = _lines(text)
    start, stop = max(1, around - context), min(len(lines), around + context)
    return "\n".join(f"{n:6d}\t{_cut(lines[n - 1], 200)}" for n in range(start, stop + 1))
