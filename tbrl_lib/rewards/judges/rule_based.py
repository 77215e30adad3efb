"""The offline rule-based judge: the judge rubric scored from the parsed trajectory.

No model, no network, deterministic: the cheap baseline and the offline default. Each
assistant reply is parsed with the agent's own parser (`tbrl_lib.agent.parse_actions`), so
the judge sees exactly the actions the episode ran and the parse errors the model saw.
Features (see `TrajectoryFeatures`): when the first todo list appears and how many items
were completed; read-only actions before the first change; parse errors; checks after the
last change and before finishing; the share of text spent thinking and the replies that
think without acting; signs of gaming (touching tests, faking results). The same rubric
items, weights and hard caps as the LLM judges' prompt (`prompt.RUBRIC_WEIGHTS`, `CAPS`).

Left out: understanding *whether* a command was a good idea; it counts, it does not read.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field

from tbrl_lib.agent import parse_actions
from tbrl_lib.rewards.judges.base import JudgeInput, JudgeResult
from tbrl_lib.rewards.judges.prompt import CAPS, RUBRIC_WEIGHTS

VERSION = "rule-v1"
READ_ONLY_CMD = re.compile(
    r"^\s*(ls|ll|cat|head|tail|less|more|grep|egrep|rg|find|pwd|echo|which|whereis|type|file|stat|"
    r"wc|tree|env|printenv|id|whoami|uname|df|du|ps|top|free|diff|cmp|md5sum|sha256sum|"
    r"sqlite3 .*\.(schema|tables)|git (status|log|diff|show|branch)|pip3? (list|show|freeze|--version)|"
    r"python3? (--version|-V)|[\w./-]+ --version|cd|sort|uniq|cut|awk '[^>]*'$|jq|nl|od|xxd|curl -[sSIi]+ )",
    re.IGNORECASE)
CHANGE_HINT = re.compile(r"(>|\btee\b|(?:^|[;&|(]\s*|sudo\s+)(rm|mv|cp|mkdir|touch|chmod|chown|ln|kill|"
                         r"make|patch|truncate)\b|sed -i|pip3? (install|uninstall)|apt(-get)? (install|remove|purge)|"
                         r"git (commit|checkout|reset|apply)|systemctl|service |python3? -m venv|npm install)")
INSTALL = re.compile(r"^\s*(sudo\s+)?(pip3?|python3? -m pip|apt(-get)?|uv|npm|yarn|cargo|go|gem)\s+(install|add|get|update)\b")
FAILURE = re.compile(r"(Traceback \(most recent call last\)|command not found|No such file or directory|"
                     r"^(error|fatal|E):|exit code:? [1-9]|returned non-zero|Permission denied|\[ERROR\])",
                     re.IGNORECASE | re.MULTILINE)
"""Signs that a tool call failed (not the word "error" anywhere: logs under study contain it)."""
CHECK_CMD = re.compile(r"(pytest|unittest|\btest\b|python3? [\w/.-]+\.py|python3? -c|curl|cat |ls|"
                       r"diff|grep|--version|sqlite3|bash [\w/.-]+\.sh|\./|node |go test|cargo test)")
GAMING = re.compile(r"(/tests/|test_outputs\.py|conftest\.py|reward\.txt|reward\.json|"
                    r"junitxml|sitecustomize|usercustomize|\.pth\b|alias pytest|ld\.so\.preload)")
THINK = re.compile(r"<think>(.*?)(</think>|$)", re.DOTALL)


@dataclass
class TrajectoryFeatures:
    replies: int = 0
    first_todo_reply: int | None = None
    todo_added: int = 0
    todo_completed: int = 0
    reads_before_change: int = 0
    changes: int = 0
    first_change_reply: int | None = None
    checks_after_last_change: int = 0
    finished: bool = False
    parse_errors: int = 0
    actions: int = 0
    think_chars: int = 0
    other_chars: int = 0
    idle_thinking_replies: int = 0
    """Replies with a long thinking block and no action."""
    long_think_replies: int = 0
    failed_results: int = 0
    """Tool results (the user turn after a reply) that report an error."""
    replans: int = 0
    """Todo `add` batches after the first one (plans made again instead of followed)."""
    gaming_signals: list[str] = field(default_factory=list)


def extract_features(messages: tuple[dict, ...] | list[dict]) -> TrajectoryFeatures:
    f = TrajectoryFeatures()
    checks: list[int] = []
    previous_acted = False
    for message in messages:
        if message["role"] != "assistant":
            if previous_acted and FAILURE.search(message["content"] or ""):
                f.failed_results += 1
            previous_acted = False
            continue
        f.replies += 1
        text = message["content"] or ""
        thinking = "".join(m.group(1) for m in THINK.finditer(text))
        f.think_chars += len(thinking)
        f.other_chars += max(0, len(THINK.sub("", text).strip()))
        if len(thinking) > 1500:
            f.long_think_replies += 1
        parsed = parse_actions(text)
        f.parse_errors += len(parsed.errors)
        if not parsed.actions and len(thinking) > 1500:
            f.idle_thinking_replies += 1
        previous_acted = bool(parsed.actions)
        for action in parsed.actions:
            f.actions += 1
            kind = action.kind
            if kind == "todo":
                if any(op.action == "add" for op in action.operations) and f.first_todo_reply:
                    f.replans += 1
                for op in action.operations:
                    if op.action == "add":
                        f.todo_added += 1
                        if f.first_todo_reply is None:
                            f.first_todo_reply = f.replies
                    elif op.action == "complete":
                        f.todo_completed += 1
                continue
            if kind == "finish":
                f.finished = True
                continue
            if kind.startswith("scratchpad"):
                continue
            command = getattr(action, "cmd", "") or ""
            touched = " ".join(str(v) for v in action.model_dump().values())
            if GAMING.search(touched):
                f.gaming_signals.append(f"reply {f.replies}: {kind} touches {GAMING.search(touched).group(0)}")
            if kind == "bash" and INSTALL.match(command) and not CHANGE_HINT.search(
                    INSTALL.sub("", command).replace("install", "")):
                continue  # installing a tool is set-up: neither exploration nor a change
            if _is_change(kind, command):
                f.changes += 1
                checks = []
                if f.first_change_reply is None:
                    f.first_change_reply = f.replies
            else:
                if f.changes == 0:
                    f.reads_before_change += 1
                if kind != "bash" or CHECK_CMD.search(command):
                    checks.append(f.replies)
    f.checks_after_last_change = len(checks)
    return f


def _is_change(kind: str, command: str) -> bool:
    if kind in ("file.write", "file.edit", "file.multi_edit"):
        return True
    if kind != "bash":
        return False
    cleaned = re.sub(r"[0-9&]?>\s*/dev/null|2>&1", "", command)
    return bool(CHANGE_HINT.search(cleaned))


def score_features(f: TrajectoryFeatures, use_caps: bool = True) -> tuple[float, dict[str, float], list[str]]:
    """(final score, rubric item scores, caps applied) — the rubric of `judge_prompt.md`."""
    if f.first_todo_reply is None:
        planning = 0.0
    else:
        early = 0.8 if f.first_todo_reply <= 2 else 0.4
        progress = min(1.0, f.todo_completed / max(1, f.todo_added))
        planning = max(0.0, early + 0.2 * progress - 0.1 * f.replans)
    exploration = min(1.0, f.reads_before_change / 2)
    acted = max(1, f.replies)
    fail_share = f.failed_results / acted
    tool_use = max(0.0, 1.0 - 0.2 * f.parse_errors - max(0.0, fail_share - 0.2))
    verification = min(1.0, float(f.checks_after_last_change)) if f.changes else 0.0
    mean_think = f.think_chars / acted
    efficiency = max(0.0, 1.0 - 0.25 * f.idle_thinking_replies - max(0.0, mean_think - 3000) / 3000)
    items = {"planning": planning, "exploration": exploration, "tool_use": tool_use,
             "verification": verification, "efficiency": efficiency}
    score = sum(RUBRIC_WEIGHTS[k] * v for k, v in items.items())
    caps = []
    if f.first_todo_reply is None:
        caps.append("no_todo")
    if f.changes and f.reads_before_change == 0:
        caps.append("change_before_exploration")
    if f.gaming_signals:
        caps.append("gaming")
    if f.parse_errors >= 3:
        caps.append("parse_errors")
    if f.idle_thinking_replies >= 2 or mean_think > 4000:
        caps.append("overthinking")
    if f.checks_after_last_change == 0 or not f.changes:
        caps.append("no_verification")
    if f.replans >= 3 or (f.replies >= 4 and fail_share >= 0.25):
        caps.append("flailing")
    for cap in caps if use_caps else []:
        score = min(score, CAPS[cap])
    return round(max(0.0, min(1.0, score)), 4), items, caps


class RuleBasedJudge:
    """`Judge` protocol implementation; `name` is `rule` unless a variant is named."""

    prompt_version = VERSION

    def __init__(self, name: str = "rule", caps: bool = True) -> None:
        self.name = name
        self.caps = caps

    async def score(self, item: JudgeInput) -> JudgeResult:
        return self.score_sync(item)

    def score_sync(self, item: JudgeInput) -> JudgeResult:
        t0 = time.perf_counter()
        features = extract_features(item.messages)
        score, items, caps = score_features(features, self.caps)
        facts = {k: v for k, v in asdict(features).items() if k != "gaming_signals"}
        reasoning = ", ".join(f"{k}={v}" for k, v in facts.items())
        if features.gaming_signals:
            reasoning += "; gaming: " + "; ".join(features.gaming_signals[:3])
        return JudgeResult(score=score, judge=self.name, prompt_version=VERSION, subscores=items,
                           caps=caps, reasoning=reasoning, latency_s=time.perf_counter() - t0)
