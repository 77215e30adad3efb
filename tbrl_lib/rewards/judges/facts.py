"""What a trajectory's messages record, as facts: each action, its tool result, and whether
the tool did what was asked.

The rule judge reads these instead of searching free text. An assistant reply is parsed
with the agent's own parser; the next user message holds one `<tag_output>` block (or
`<parse_error>`) per tag, in the order the tags were written (`agent.toolbox.
format_observation`), so each action is paired with its own result. A result failed when
its tool said so in the observation format:

- tbrl's tools: the body starts with `[ERROR]` (a `ToolError`, `ToolCall.ok == False` in
  the episode record), ends with `[exit code N]` (bash, N != 0) or reports a timeout;
- the upstream tools (judge cases written by Terminal-Bench-RL): the first line is the
  tool's error report (`Error editing file: ...`, `File not found: ...`, `...: Not found`,
  `Command timed out after ...`);
- a shell error line opens or closes a bash result (`X: command not found`,
  `X: ...: No such file or directory`, `Permission denied`, `fatal: ...`, `E: ...`) or the
  result ends in a Python exception after a traceback: a failed pipeline keeps exit code 0,
  but its error line is still the tool result's own first or last line.

Bash commands are classed by what they ask for (`command_class`): `say` (prints words it
was given: `echo`, `printf` without a file or a substitution, `true`, `sleep`), `read`
(inspection only), `probe` (run a program or tests), `setup` (install), `change` (anything
that writes).

Evidence. What an action's words claim (a todo ticked, "verified", "all checks passed"
echoed or written in `<finish>`) is not a fact; what it touched is. `touched_paths` lists the
files and directories a change names (its written targets and what it ran on, `cd` aside),
and `checks_work` says whether a later action looked at that work: it names one of those
paths (reads, compares or runs them: `cat`, `diff`, `test -s`, `python3 out.py`, a file
read), or runs the tests or queries a service (`pytest`, `make test`, `curl`).

Left out: whether a command was a good idea, whether a check's *output* agreed with the task
(a `diff` that shows a difference is still a check), and results buried mid-output (logs
under study hold error lines that are not the tool's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tbrl_lib.agent.actions import Action, BashAction
from tbrl_lib.agent.parser import ParseError, parse_actions, split_thinking

BLOCK = re.compile(
    r"<(?P<tag>\w+?)_output>\n?(?P<body>.*?)\n?</(?P=tag)_output>|"
    r"<parse_error>\n?(?P<perr>.*?)\n?</parse_error>",
    re.DOTALL,
)
EXIT_CODE = re.compile(r"^\[exit code (-?\d+)\]$", re.MULTILINE)
TIMED_OUT = re.compile(r"^(\[timed out after|Command timed out after)", re.MULTILINE)
TOOL_ERROR_FIRST_LINE = re.compile(
    r"^(\[ERROR\]|Error\b|File not found:|Failed to\b|.*: Not found$)", re.IGNORECASE
)
SHELL_ERROR_LINE = re.compile(
    r"^(\S+: )+(line \d+: )?(.+: )?(command not found|No such file or directory|Permission denied"
    r"|cannot access .*|Is a directory|Not a directory)$|^(fatal|E|error|ERROR): |^[Uu]sage: |"
    r"(Can't operate\.|not a TTY|Is the docker daemon running\?)$"
)
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")
ANSWERS_NO = re.compile(r"^(grep|egrep|fgrep|rg|diff|cmp|test|\[)\b")
"""Commands whose exit status 1 answers a question ("no match", "they differ")."""

READ_CMD = re.compile(
    r"^(ls|ll|cat|head|tail|less|more|grep|egrep|rg|find|pwd|echo|printf|which|whereis|type|"
    r"file|stat|wc|tree|env|printenv|id|whoami|uname|df|du|ps|free|diff|cmp|md5sum|sha256sum|"
    r"sort|uniq|cut|awk|nl|od|xxd|hexdump|jq|column|tr|date|hostname|ip|ss|netstat|"
    r"lsof|true|test|\[|cd|sed -n|git (status|log|diff|show|branch|remote)|"
    r"pip3? (list|show|freeze)|apt(-cache)? (list|show|search|policy)|dpkg -[lLs]|"
    r"python3? (--version|-V|-m json\.tool)|\S+ --version|sqlite3 \S+ ['\"]?(\.schema|\.tables|"
    r"select))\b",
    re.IGNORECASE,
)
PROBE_CMD = re.compile(
    r"^(pytest|python3? -m (pytest|unittest)|python3?|node|bash|sh|\./|"
    r"\S+\.(sh|py)\b|curl|wget -O ?-|make (test|check)|go test|cargo test|"
    r"npm test|sqlite3)",
    re.IGNORECASE,
)
SAY_CMD = re.compile(r"^(echo|printf|true|:|sleep)\b")
"""Commands that only print the words they were given (with no file or substitution)."""
TEST_CMD = re.compile(
    r"(^|[\s/])(pytest|py\.test|python3? -m (pytest|unittest)|tox|bats|"
    r"(make|npm|yarn|go|cargo|mvn|gradle) (test|check)|ctest|curl|wget)\b"
)
"""Commands that run tests or query a service: checks whatever paths they name."""
PATH_TOKEN = re.compile(
    r"(?<![\w.:/$-])(/?(?:[\w.+-]+/)*[\w+-][\w.+-]*\.[A-Za-z0-9]{1,8}"
    r"|/[\w.+-]+(?:/[\w.+-]+)+|(?:[\w+-][\w.+-]*/)+[\w.+-]+)(?![\w(])"
)
"""A file or directory name: `out.json`, `/app/venv`, `logs/app.log` (not `/app`, not a
call like `json.dump(`)."""
SETUP_CMD = re.compile(
    r"^(sudo )?(pip3?|python3? -m pip|apt(-get)?|uv|npm|yarn|cargo|gem|go)\s+"
    r"(install|add|get|update)\b",
    re.IGNORECASE,
)
WRITES = re.compile(
    r"(>>?\s*(?!/dev/null)(?!&)\S|\btee\b|\bsed\b[^|;&]*\s-i|\b(rm|mv|cp|mkdir|"
    r"touch|chmod|chown|ln|kill|pkill|patch|truncate|install|useradd|groupadd|"
    r"crontab|systemctl|service|git (commit|checkout|reset|apply|add|rm|mv|"
    r"merge|rebase|cherry-pick|revert|init|clone|stash|branch -[dD]))\b|"
    r"open\([^)]*['\"][wax]b?\+?['\"]|\.write(_text|_bytes)?\(|json\.dump\(|"
    r"to_csv\(|shutil\.|os\.(remove|rename|unlink|makedirs|mkdir)|"
    r"-m venv|\bdd\b)"
)


@dataclass(frozen=True)
class ToolFact:
    """One action of a reply and what its tool answered."""

    reply: int
    """1-based index of the assistant reply that wrote the action."""
    kind: str
    """`bash`, `file.edit`, `todo`, ... or `parse_error`."""
    action: Action | None
    output: str | None
    """The tool result's body; None when the messages hold no result for it."""
    failure: str = ""
    """Empty when the tool did what was asked; else why not (`exit code 1`, `tool error`, ...)."""

    @property
    def ok(self) -> bool:
        return not self.failure and self.kind != "parse_error"

    @property
    def signature(self) -> str:
        """What the action asked for (equal signatures: the same action sent again)."""
        return repr(self.action.record()) if self.action is not None else self.kind


@dataclass
class ReplyFact:
    index: int
    think_chars: int
    other_chars: int
    calls: list[ToolFact] = field(default_factory=list)
    answered: bool = True
    """A user message (tool results) follows the reply."""


def trajectory_facts(messages: tuple[dict, ...] | list[dict]) -> list[ReplyFact]:
    """Every assistant reply with its actions paired to their tool results."""
    replies: list[ReplyFact] = []
    for position, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        text = message["content"] or ""
        thinking, rest, _ = split_thinking(text)  # also a block the chat template opened
        reply = ReplyFact(len(replies) + 1, len(thinking), len(rest.strip()))
        following = messages[position + 1] if position + 1 < len(messages) else None
        reply.answered = following is not None and following["role"] != "assistant"
        blocks = _blocks(following["content"] or "") if reply.answered else []
        for item in parse_actions(text).items:
            reply.calls.append(_pair(reply.index, item, blocks))
        replies.append(reply)
    return replies


def _blocks(observation: str) -> list[tuple[str, str]]:
    return [
        ("parse_error", m.group("perr"))
        if m.group("perr") is not None
        else (m.group("tag"), m.group("body"))
        for m in BLOCK.finditer(observation)
    ]


def _pair(reply: int, item: Action | ParseError, blocks: list[tuple[str, str]]) -> ToolFact:
    """Take the first unused result block of the item's tag (results come in order)."""
    tag = "parse_error" if isinstance(item, ParseError) else item.tag
    at = next((i for i, (block_tag, _) in enumerate(blocks) if block_tag == tag), None)
    body = blocks.pop(at)[1] if at is not None else None
    if isinstance(item, ParseError):
        return ToolFact(reply, "parse_error", None, body, "parse error")
    cmd = item.cmd if isinstance(item, BashAction) else ""
    return ToolFact(
        reply, item.kind, item, body, failure_of(item.tag, body, cmd) if body is not None else ""
    )


def failure_of(tag: str, body: str, cmd: str = "") -> str:
    """Why a tool result reports failure in the observation format ('' when it does not).
    `cmd` (bash) lets exit status 1 of a question (`grep`, `diff`, `test`) mean "no"."""
    lines = [line for line in body.strip("\n").splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("[ERROR]"):
        return "tool error"
    code = EXIT_CODE.search(body)
    if (
        code
        and code.group(1) != "0"
        and not (
            code.group(1) == "1" and ANSWERS_NO.match(_segments(cmd)[-1] if _segments(cmd) else "")
        )
    ):
        return f"exit code {code.group(1)}"
    if TIMED_OUT.search(body):
        return "timed out"
    if tag in ("file", "search", "scratchpad", "todo") and TOOL_ERROR_FIRST_LINE.match(lines[0]):
        return "tool error"
    if tag == "bash":
        tail = [line for line in lines if not line.startswith("[")] or lines
        if SHELL_ERROR_LINE.match(tail[0].strip()) or SHELL_ERROR_LINE.match(tail[-1].strip()):
            return "shell error"
        if any(
            line.startswith("Traceback (most recent call last)") for line in tail
        ) and EXCEPTION_LINE.match(tail[-1].strip()):
            return "exception"
    return ""


def command_class(action: Action) -> str:
    """`read`, `probe`, `setup`, `change` (bash) or by the action's kind (tools)."""
    kind = action.kind
    if kind in ("file.write", "file.edit", "file.multi_edit"):
        return "change"
    if kind.startswith(("file.", "search.")):
        return "read"
    if not isinstance(action, BashAction):
        return kind.split(".")[0]  # todo, scratchpad, finish
    cmd = action.cmd.strip()
    segments = [s for s in _segments(cmd) if not re.match(r"^cd\b", s)] or ["cd"]
    if SETUP_CMD.match(segments[0]):
        return "setup"
    if WRITES.search(cmd):
        return "change"
    if all(SAY_CMD.match(segment) for segment in segments) and not re.search(r"\$\(|`|<", cmd):
        return "say"
    if all(READ_CMD.match(segment) for segment in segments):
        return "read"
    return "probe"  # runs a program or the tests; anything that writes was caught above


def _words(action: Action) -> str:
    """What an action names: a bash command line (its heredoc body too), or its fields."""
    if isinstance(action, BashAction):
        return action.cmd
    return " ".join(str(v) for v in action.record()["fields"].values())


def touched_paths(action: Action) -> set[str]:
    """The files and directories a change names (see the module docstring)."""
    if isinstance(action, BashAction):
        text = "\n".join(s for s in _segments(action.cmd) if not re.match(r"^cd\b", s))
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", action.cmd)
        text += action.cmd[heredoc.end() :] if heredoc else ""
    else:
        text = str(getattr(action, "file_path", "") or "")
    return {m.group(1).rstrip(".") for m in PATH_TOKEN.finditer(text)}


def checks_work(action: Action, touched: set[str]) -> bool:
    """Does `action` look at the work: name a path the changes touched (the same path, its
    file name, or a path inside it), or run the tests / query a service?"""
    words = _words(action)
    if isinstance(action, BashAction) and any(TEST_CMD.search(s) for s in _segments(words)):
        return True
    named = {m.group(1).rstrip(".") for m in PATH_TOKEN.finditer(words)}
    names = {p.rsplit("/", 1)[-1] for p in touched if "." in p.rsplit("/", 1)[-1]}
    return any(
        n in touched
        or n.rsplit("/", 1)[-1] in names
        or any(n.startswith(t + "/") for t in touched if t.startswith("/"))
        for n in named
    )


def _segments(cmd: str) -> list[str]:
    """The simple commands of a command line: split at unquoted `|`, `;`, `&&`, `||`, newlines
    (a heredoc's body stays with its command), brackets and spaces stripped."""
    parts, current, quote, i = [], [], "", 0
    heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", cmd)
    if heredoc:  # everything from the heredoc on belongs to that one command
        cmd = cmd[: heredoc.start()]
    while i < len(cmd):
        char = cmd[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "|;\n&" and not (char == "&" and cmd[i : i + 2] != "&&"):
            parts.append("".join(current))
            current = []
            i += 2 if cmd[i : i + 2] in ("&&", "||") else 1
            continue
        current.append(char)
        i += 1
    parts.append("".join(current))
    return [p.strip("() \t") for p in parts if p.strip("() \t")]
