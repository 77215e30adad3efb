"""The `search` tool (read-only): grep with a regex and an include glob, glob with real
`**`, and ls with ignore globs. Listing runs in the container (find/grep); `**` matching
is done here with `glob_to_regex`, so it behaves the same in every image.

Pseudo filesystems (/proc, /sys, /dev) and `.git`/`node_modules` directories are skipped.
Left out: content search inside binary files, .gitignore awareness.
"""

from __future__ import annotations

import fnmatch
import re

from tbrl_lib.agent.actions import SearchGlob, SearchGrep, SearchLs
from tbrl_lib.agent.config import ToolConfig
from tbrl_lib.agent.tool_base import ToolError, probe, q
from tbrl_lib.sandbox.base import Sandbox

MAX_LISTED = 100_000
_PRUNE = r"\( -path /proc -o -path /sys -o -path /dev -o -name .git -o -name node_modules \) -prune"
_GREP = "if printf x | grep -qP x 2>/dev/null; then __g='grep -P'; else __g='grep -E'; fi; "


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex: `*`, `?`, `[...]` stay in one directory; `**` spans any number
    of directories (including none); `{a,b}` is an alternative."""
    try:
        return re.compile("(?s:" + _translate(pattern) + r")\Z")
    except re.error as exc:
        raise ToolError(f"cannot read the glob {pattern!r}: {exc}") from exc


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "{" and (end := pattern.find("}", i)) != -1:
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(o) for o in options) + ")")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


class SearchTool:
    tag = "search"

    def __init__(self, sandbox: Sandbox, config: ToolConfig) -> None:
        self.sandbox = sandbox
        self.config = config

    async def __call__(self, action: SearchGrep | SearchGlob | SearchLs) -> str:
        if isinstance(action, SearchGrep):
            return await self.grep(action)
        if isinstance(action, SearchGlob):
            return await self.glob(action)
        return await self.ls(action)

    async def _dir(self, path: str | None) -> str:
        info = await probe(self.sandbox, path or ".")
        if info.kind == "missing":
            raise ToolError(f"path not found: {info.path}")
        return info.path

    async def grep(self, action: SearchGrep) -> str:
        root = await self._dir(action.path)
        limit = self.config.search_max_results
        name = f"-name {q(action.include)} " if action.include else ""
        script = (
            _GREP + f"find {q(root)} {_PRUNE} -o -type f {name}-print0 2>/dev/null | "
            f"xargs -0 -r $__g -nIH --color=never -e {q(action.pattern)} -- 2>&1 | head -n {limit + 1}; "
            "unset __g"
        )
        result = await self.sandbox.run(script, timeout=self.config.search_timeout)
        if result.timed_out:
            raise ToolError(
                f"grep under {root} took longer than {self.config.search_timeout:.0f}s; narrow the path"
            )
        lines = [line for line in result.output.split("\n") if line]
        problems = [line for line in lines if line.startswith("grep:")]
        matches = [line[:300] for line in lines if not line.startswith("grep:")]
        if problems and not matches:
            raise ToolError(
                f"grep failed: {problems[0][6:]} (the pattern is a Perl-compatible regex)"
            )
        if not matches:
            return f"No matches for {action.pattern!r} under {root}" + (
                f" in {action.include}" if action.include else ""
            )
        more = len(matches) > limit
        text = "\n".join(matches[:limit])
        return (
            f"{min(len(matches), limit)} matches"
            + (
                f" (more exist; showing the first {limit}: narrow the pattern, path or include)"
                if more
                else ""
            )
            + f":\n{text}"
        )

    async def glob(self, action: SearchGlob) -> str:
        pattern = action.pattern
        root = "/" if pattern.startswith("/") else await self._dir(action.path)
        regex = glob_to_regex(pattern.lstrip("/"))
        entries, capped = await self._walk(root)
        base = root.rstrip("/") + "/"
        found = [
            (kind, path)
            for kind, path in entries
            if path.startswith(base) and regex.match(path[len(base) :])
        ]
        limit = self.config.search_max_results
        if not found:
            return f"No files match {pattern!r} under {root}" + (
                f" (the search stopped after {MAX_LISTED:,} entries)" if capped else ""
            )
        lines = [
            path + ("/" if kind == "d" else "")
            for kind, path in sorted(found, key=lambda e: e[1])[:limit]
        ]
        head = f"{len(found)} paths match {pattern!r} under {root}"
        if len(found) > limit:
            head += f" (showing the first {limit}; narrow the pattern or path)"
        if capped:
            head += f" (listing stopped after {MAX_LISTED:,} entries; use a narrower path)"
        return head + ":\n" + "\n".join(lines)

    async def _walk(self, root: str) -> tuple[list[tuple[str, str]], bool]:
        script = f"find {q(root)} -mindepth 1 {_PRUNE} -o -printf '%y %p\\n' 2>/dev/null | head -n {MAX_LISTED + 1}"
        result = await self.sandbox.run(script, timeout=self.config.search_timeout)
        if result.timed_out:
            raise ToolError(
                f"listing {root} took longer than {self.config.search_timeout:.0f}s; use a narrower path"
            )
        entries = [
            (line[0], line[2:])
            for line in result.output.split("\n")
            if len(line) > 2 and line[1] == " "
        ]
        return entries[:MAX_LISTED], len(entries) > MAX_LISTED or result.truncated_bytes > 0

    async def ls(self, action: SearchLs) -> str:
        root = await self._dir(action.path)
        script = (
            f"find {q(root)} -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%f\\n' 2>&1 | head -n 5001"
        )
        result = await self.sandbox.run(script, timeout=self.config.search_timeout)
        rows = [line.split("\t", 2) for line in result.output.split("\n") if line.count("\t") >= 2]
        if not rows and result.output.strip().startswith("find:"):
            raise ToolError(result.output.strip()[6:])
        kept = [r for r in rows if not any(fnmatch.fnmatchcase(r[2], pat) for pat in action.ignore)]
        hidden = len(rows) - len(kept)
        kept.sort(key=lambda r: (r[0] != "d", r[2]))
        limit = self.config.search_max_results * 5
        lines = [
            f"  {'dir ' if k == 'd' else 'link' if k == 'l' else 'file'}  {_size(int(s)) if k != 'd' else '-':>9}  "
            f"{n}{'/' if k == 'd' else ''}"
            for k, s, n in kept[:limit]
        ]
        head = f"{root}: {len(kept)} entries" + (f" ({hidden} hidden by ignore)" if hidden else "")
        if len(kept) > limit:
            head += f" (showing the first {limit})"
        return head + (":\n" + "\n".join(lines) if lines else "")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
