"""What a failed image build says: the step that failed, its command, and the lines that say why.

The engine's build stream (the classic builder, which the docker SDK drives) is a sequence of
chunks: `{"stream": text}` pieces - step headers (`Step 3/5 : RUN pip3 install ...`), the
step's own output (stderr wrapped in ANSI colour codes, lines split across chunks),
bookkeeping (` ---> 1a2b3c`, `Removing intermediate container`) - and, on failure, one
`{"error": ..., "errorDetail": {"code": n}}`. `BuildLog.feed` reassembles lines per step;
`failure()` returns the failing step, its instruction, its exit code, the end of that step's
own output and the error lines in it: from the first line that reads like an error (pip's
`ERROR:` / `error:` / `×`, apt's `E:`, git's `fatal:`, a Python traceback), a dozen lines at
most; the step's last lines when none does.

Whose fault (`BuildFailure.task_fault`), by cause: a step that exits non-zero, a COPY of a
file the task does not ship, a FROM image this engine cannot provide - the task's; a step
whose output shows the network or the disk failing (names that do not resolve, refused or
timed-out connections, no space left) - the infrastructure's, which a retry may fix.

Left out: BuildKit's progress format (the classic builder is what `docker.APIClient.build`
speaks), and telling a task that needs an unreachable host from a network outage (both read as
the network failing).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BOOKKEEPING = re.compile(r"^( ---> |Removing intermediate container |Successfully (built|tagged) )")
EXIT_CODE = re.compile(r"returned a non-zero code: (\d+)")
ERROR_LINE = re.compile(
    r"^\s*(ERROR\b|E:|error\b|Error\b|fatal:|FATAL\b|×|npm ERR!|Traceback \(most recent"
    r"|[A-Za-z_][\w.]*(Error|Exception): )"
)
"""Where the lines that say why begin: pip, apt, git, gcc, npm, Python tracebacks."""
NETWORK = re.compile(
    r"Temporary failure (in name resolution|resolving)|Name or service not known"
    r"|Could not resolve (host|proxy)|unable to resolve host address|Failed to establish a new "
    r"connection|Network is unreachable|No route to host|Connection (timed out|refused)"
    r"|Read timed out|ConnectTimeoutError|Could not connect to|No space left on device",
    re.IGNORECASE,
)
"""Output that means the network (or the disk) failed, not the task's own commands."""
STEP_LINES = 400
"""Lines of each step's output kept (the end: where a failure's reason is)."""
TAIL_LINES = 20
"""Lines of the failing step's output a failure shows."""
ERROR_LINES = 12
SUMMARY_CHARS = 600


@dataclass
class Step:
    number: str
    """`3/5`: this step of that many (the engine counts the LABEL steps it appends, so a
    summary names the step's number only)."""
    instruction: str
    output: deque[str] = field(default_factory=lambda: deque(maxlen=STEP_LINES))


@dataclass(frozen=True)
class BuildFailure:
    """Why a build stopped, from the engine's own stream."""

    error: str
    """The engine's error text (`The command ... returned a non-zero code: 1`, `COPY failed: ...`)."""
    step: str | None = None
    instruction: str | None = None
    exit_code: int | None = None
    output_tail: tuple[str, ...] = ()
    """The last lines the failing step printed (its own output only)."""
    error_lines: tuple[str, ...] = ()
    """The lines of that output that say why (see module doc); the tail's end if none does."""
    task_fault: bool = True
    network: bool = False
    """The step's output shows the network or the disk failing (infrastructure)."""

    @property
    def keyword(self) -> str:
        return (self.instruction or "").split(" ", 1)[0].upper()

    def summary(self) -> str:
        """One line: which step, its command, and what it printed about the failure."""
        if self.step is None:
            return _cut(self.error)
        head = f"step {self.step.split('/')[0]} `{_cut(self.instruction or '', 160)}`"
        if self.exit_code is not None:
            head += f" exited {self.exit_code}"
        else:
            head += " failed"
        why = " | ".join(self.error_lines) if self.error_lines else self.error
        if self.network:
            head += " (the network or the disk failed, not the task's commands)"
        return _cut(f"{head}: {why}")

    def details(self) -> str:
        """Several lines: the engine's error, then the end of the failing step's output."""
        lines = [f"engine: {self.error}"]
        if self.step is not None:
            lines.append(f"--- end of the output of step {self.step.split('/')[0]} ---")
            lines += list(self.output_tail) or ["(the step printed nothing)"]
        return "\n".join(lines)


class BuildLog:
    """Feed it the decoded chunks of one build; ask `failure()` at the end."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.error: str | None = None
        self.error_code: int | None = None
        self._partial = ""

    def feed(self, chunk: dict[str, Any]) -> None:
        if "stream" in chunk:
            self._partial += ANSI.sub("", str(chunk["stream"]))
            *lines, self._partial = self._partial.split("\n")
            for line in lines:
                self._line(line.rstrip("\r"))
        if "error" in chunk:
            self._flush()
            self.error = str(chunk.get("error") or "").strip()
            detail = chunk.get("errorDetail") or {}
            self.error_code = detail.get("code") if isinstance(detail, dict) else None

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines of the build so far (for a build stopped from outside)."""
        self._flush()
        current = self.steps[-1] if self.steps else None
        if current is None:
            return ""
        return "\n".join([f"Step {current.number} : {current.instruction}", *_last(current, lines)])

    def failure(self) -> BuildFailure | None:
        """Why the build failed; None when the engine reported no error."""
        self._flush()
        if self.error is None:
            return None
        step = self.steps[-1] if self.steps else None
        if step is None:
            return BuildFailure(self.error, task_fault=False)
        code = self.error_code
        if code is None and (match := EXIT_CODE.search(self.error)):
            code = int(match.group(1))
        output = [line for line in step.output if line.strip()]
        network = any(NETWORK.search(line) for line in [*output, self.error])
        keyword = step.instruction.split(" ", 1)[0].upper()
        return BuildFailure(
            error=self.error,
            step=step.number,
            instruction=step.instruction,
            exit_code=code if keyword == "RUN" else None,
            output_tail=tuple(output[-TAIL_LINES:]),
            error_lines=tuple(_error_lines(output)),
            task_fault=keyword == "FROM" or not network,
            network=network and keyword != "FROM",
        )

    def _line(self, line: str) -> None:
        match = STEP.match(line)
        if match:
            self.steps.append(Step(match.group(1), match.group(2).strip()))
        elif self.steps and not BOOKKEEPING.match(line):
            self.steps[-1].output.append(line)

    def _flush(self) -> None:
        if self._partial:
            self._line(self._partial.rstrip("\r"))
            self._partial = ""


def _error_lines(output: list[str]) -> list[str]:
    """From the first error-like line to the end (at most `ERROR_LINES`); else the last 3."""
    for index, line in enumerate(output):
        if ERROR_LINE.match(line):
            return [x.strip() for x in output[index : index + ERROR_LINES]]
    return [x.strip() for x in output[-3:]]


def _last(step: Step, lines: int) -> list[str]:
    return list(step.output)[-lines:]


def _cut(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
