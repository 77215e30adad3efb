"""The judge prompt (a versioned markdown file), the rendered judge input, and score parsing.

`load_prompt()` reads `judge_prompt.md` (or a file given in the judge config): its front
matter carries `version`, logged with every score. `render_input` lays out the task, the
environment and the trajectory (each reply's reasoning as one `<think>` block, whatever
chat format wrote it: `judged_reply`), truncated to a token budget with a visible marker that
keeps the start and the end (where planning and verification live). `parse_score` reads
the judge's answer: a JSON object (also inside a code fence or surrounded by prose), else
a `score: 0.7` / `Score = 0.7` / `0.7/1` line; out-of-range or non-finite numbers are
rejected, never clipped into a fake score.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from tbrl_lib.agent.parser import split_thinking
from tbrl_lib.rewards.judges.base import JudgeFormatError, JudgeInput

PROMPT_FILE = Path(__file__).with_name("judge_prompt.md")
RUBRIC_WEIGHTS = {
    "planning": 0.25,
    "exploration": 0.25,
    "tool_use": 0.20,
    "verification": 0.20,
    "efficiency": 0.10,
}
CAPS = {
    "no_todo": 0.40,
    "change_before_exploration": 0.30,
    "gaming": 0.05,
    "parse_errors": 0.60,
    "overthinking": 0.45,
    "no_verification": 0.60,
    "flailing": 0.40,
}
CHARS_PER_TOKEN = 4
FORMAT_CORRECTION = (
    "Your previous answer could not be read. Answer again with exactly one JSON "
    'object such as {"planning": 0.5, "exploration": 0.5, "tool_use": 0.5, '
    '"verification": 0.5, "efficiency": 0.5, "caps": [], "reasoning": "...", '
    '"score": 0.5} and nothing else.'
)
SCORE_SCHEMA = {
    "type": "object",
    "properties": {
        **{k: {"type": "number"} for k in RUBRIC_WEIGHTS},
        "caps": {"type": "array", "items": {"type": "string"}},
        "reasoning": {"type": "string"},
        "score": {"type": "number"},
    },
    "required": [*RUBRIC_WEIGHTS, "caps", "reasoning", "score"],
}


@dataclass(frozen=True)
class JudgePrompt:
    version: str
    text: str
    path: str


def load_prompt(path: str | Path | None = None) -> JudgePrompt:
    """Read a judge prompt file; its front matter must name a `version`."""
    path = Path(path) if path else PROMPT_FILE
    raw = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", raw, flags=re.DOTALL)
    version = None
    if match:
        found = re.search(r"^version:\s*(\S+)\s*$", match.group(1), flags=re.MULTILINE)
        version = found.group(1) if found else None
    if not version:
        raise ValueError(
            f"{path}: no `version:` in the front matter; start the file with "
            "'---\\nversion: my-judge-v1\\n---'"
        )
    return JudgePrompt(version=version, text=raw[match.end() :].strip(), path=str(path))


def truncate_middle(text: str, budget_chars: int) -> str:
    """Keep the first and last parts; the dropped middle is replaced by a visible marker."""
    if len(text) <= budget_chars:
        return text
    head = budget_chars * 2 // 5
    tail = budget_chars - head
    dropped = len(text) - head - tail
    marker = (
        f"\n\n[... {dropped} characters (~{dropped // CHARS_PER_TOKEN} tokens) of the "
        "trajectory omitted here to fit the judge's budget ...]\n\n"
    )
    return text[:head] + marker + text[-tail:]


def render_input(item: JudgeInput, max_tokens: int = 24_000) -> str:
    """The user message a judge reads: task, environment, trajectory (budgeted)."""
    turns = []
    for i, message in enumerate(item.messages):
        content = message["content"] or ""
        if message["role"] == "assistant":
            content = judged_reply(content)
        turns.append(f"### [{i}] {message['role']}\n{content}")
    trajectory = truncate_middle("\n\n".join(turns), max(1000, max_tokens * CHARS_PER_TOKEN - 4000))
    env = truncate_middle(item.environment or "(not given)", 3000)
    return (
        f"## Task\n{item.instruction}\n\n## Environment (Dockerfile)\n```\n{env}\n```\n\n"
        f"## Trajectory ({len(item.messages)} messages)\n{trajectory}\n\n"
        "Grade the process with the rubric; answer with the JSON object only."
    )


def judged_reply(text: str) -> str:
    """An assistant reply as the judge reads it: its reasoning in one `<think>` block first,
    whichever chat format wrote it (a block the template opened leaves a bare `</think>`),
    then the rest; a block the reply never closed stays open, so the judge sees the cut.
    A reply without thinking (thinking off) is unchanged."""
    reasoning, rest, unclosed = split_thinking(text)
    if unclosed:  # cut while thinking: what came before, then the open block
        return f"{rest.strip()}\n<think>\n{reasoning}".lstrip()
    if not reasoning:
        return text
    return f"<think>\n{reasoning}\n</think>\n{rest.strip()}"


def parse_score(text: str) -> tuple[float, dict]:
    """(score, parsed fields) from a judge's reply; raises `JudgeFormatError`."""
    text = text or ""
    for candidate in _json_candidates(text):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "score" in data:
            return _checked(data.get("score"), text), data
    match = re.search(
        r"(?:final\s+)?score\s*[:=]\s*\**\s*([0-9]*\.?[0-9]+)", text, flags=re.IGNORECASE
    )
    if match:
        return _checked(match.group(1), text), {}
    match = re.search(r"\b([01](?:\.[0-9]+)?)\s*/\s*1(?:\.0)?\b", text)
    if match:
        return _checked(match.group(1), text), {}
    raise JudgeFormatError(f"no score found in the judge's reply: {text[:200]!r}")


def _json_candidates(text: str) -> list[str]:
    out = re.findall(r"```(?:json)?\s*(\{.*?\})\s*```", text, flags=re.DOTALL)
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        out.append(text[start : end + 1])
    return out


def _checked(value, text: str) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise JudgeFormatError(f"score {value!r} is not a number: {text[:200]!r}") from None
    if math.isnan(score) or not 0.0 <= score <= 1.0:
        raise JudgeFormatError(f"score {score} is outside [0, 1]: {text[:200]!r}")
    return score
