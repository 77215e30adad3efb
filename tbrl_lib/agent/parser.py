"""Turns an assistant reply into typed actions and readable errors; never raises.

The action language: XML-style tags whose bodies are YAML, several per reply, run in the
order written. Text inside `<think>...</think>` is skipped (also a reply that starts inside
a thinking block opened by the chat template, i.e. with a bare `</think>`). Every error names
the tag and its position, says what is wrong (YAML line/column, missing field, wrong type,
unknown tag or field) and shows a correct example, so the model can fix it next turn.
What is left out: executing anything (see `tools`), and attributes on tags (an error).
"""

from __future__ import annotations

import difflib
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError

from tbrl_lib.agent.actions import ACTION_MODELS, ACTION_TAGS, MODES, Action, example_for

MAX_BODY_CHARS = 200_000
OUTPUT_TAGS = {f"{tag}_output" for tag in ACTION_TAGS} | {"parse_error", "tool_output", "output"}
UNSUPPORTED_UPSTREAM = {
    "collapse_context": "tbrl keeps the whole conversation; use <scratchpad> to keep notes"
}
_TAG = re.compile(r"<(/?)([A-Za-z_][A-Za-z0-9_\-]*)([^<>\n]*)>")
_SHOWN_BODY_CHARS = 300


@dataclass(frozen=True)
class ParseError:
    """One malformed or unknown tag. `message` is what the model reads."""

    tag: str
    index: int
    """Position among the tags of the reply (1-based)."""
    problem: str
    body: str = ""
    mode: str | None = None

    @property
    def message(self) -> str:
        shown = self.body.strip("\n")
        if len(shown) > _SHOWN_BODY_CHARS:
            shown = (
                shown[:_SHOWN_BODY_CHARS]
                + f"... [{len(shown) - _SHOWN_BODY_CHARS} more characters]"
            )
        parts = [f"[ERROR] Tag {self.index} <{self.tag}> was not run: {self.problem}"]
        if shown:
            parts.append(f"Your body was:\n{shown}")
        if self.tag in ACTION_TAGS:
            mode = self.mode or _guess_mode(self.body)
            parts.append(f"A correct example:\n{example_for(self.tag, mode)}")
        return "\n".join(parts)


@dataclass
class ParseResult:
    items: list[Action | ParseError] = field(default_factory=list)
    """Actions and errors in the order they appear in the reply."""

    @property
    def actions(self) -> list[Action]:
        return [item for item in self.items if isinstance(item, Action)]

    @property
    def errors(self) -> list[ParseError]:
        return [item for item in self.items if isinstance(item, ParseError)]


def parse_actions(text: str) -> ParseResult:
    """All tags of one assistant reply, as actions or errors. Never raises."""
    try:
        return _parse(text if isinstance(text, str) else str(text))
    except Exception as exc:  # noqa: BLE001 - a parser bug must not kill a rollout; the model sees it
        return ParseResult(
            [ParseError("reply", 1, f"internal parser error ({type(exc).__name__}: {exc})")]
        )


def parse_body(tag: str, body: str, index: int = 1) -> Action | ParseError:
    """One tag body (YAML text) to an action or an error."""
    try:
        data = _load_yaml(body)
    except yaml.YAMLError as exc:
        return ParseError(tag, index, _yaml_problem(exc, body), body)
    except RecursionError:
        return ParseError(tag, index, "the YAML is nested too deeply", body)
    return validate_fields(tag, data, index, body)


def validate_fields(tag: str, data: Any, index: int = 1, body: str = "") -> Action | ParseError:
    """A parsed YAML value to the typed action of `tag`, or an error saying what is wrong."""
    if not isinstance(data, dict):
        got = "nothing (empty body)" if data is None else f"{_type_name(data)} {_short(data)}"
        return ParseError(
            tag,
            index,
            f"the body must be a YAML mapping of fields (`name: value` lines); got {got}",
            body,
        )
    modes = MODES[tag]
    mode = None
    if modes:
        mode = data.get("action")
        if mode is None:
            return ParseError(
                tag, index, f"field 'action' is missing; it must be one of {', '.join(modes)}", body
            )
        if mode not in modes:
            hint = _did_you_mean(str(mode), modes)
            return ParseError(
                tag, index, f"action {_short(mode)} is not one of {', '.join(modes)}{hint}", body
            )
        data = {k: v for k, v in data.items() if k != "action"}
    model = ACTION_MODELS[(tag, mode)]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_field_problem(err, model) for err in exc.errors())
        return ParseError(tag, index, problems, body, mode)


def action_from_record(record: dict[str, Any]) -> Action:
    """Inverse of `Action.record()` (used when loading trajectories)."""
    result = validate_fields(record["tag"], dict(record["fields"]))
    if isinstance(result, ParseError):
        raise ValueError(result.message)
    return result


OPEN_THINK, CLOSE_THINK = "<think>", "</think>"


def _think_spans(text: str) -> tuple[list[tuple[int, int, int, int]], bool]:
    """Each thinking block as (start, stop, body start, body stop), and whether the last one
    was left open. A `</think>` before any `<think>` closes a block the template opened."""
    spans: list[tuple[int, int, int, int]] = []
    first_close, first_open = text.find(CLOSE_THINK), text.find(OPEN_THINK)
    pos = 0
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        pos = first_close + len(CLOSE_THINK)
        spans.append((0, pos, 0, first_close))
    while (start := text.find(OPEN_THINK, pos)) != -1:
        end = text.find(CLOSE_THINK, start)
        if end == -1:
            spans.append((start, len(text), start + len(OPEN_THINK), len(text)))
            return spans, True
        pos = end + len(CLOSE_THINK)
        spans.append((start, pos, start + len(OPEN_THINK), end))
    return spans, False


def split_thinking(text: str) -> tuple[str, str, bool]:
    """(reasoning, the rest, whether a `<think>` was left open) of a reply, in every chat format
    the parser reads: Qwen3's `<think>...</think>` first (thinking on), a reply that starts
    inside a block the template opened (a bare `</think>`: DeepSeek-R1, Qwen3 `-Thinking`
    models), several blocks, or none (thinking off: the template closed an empty block in the
    prompt). The reasoning of several blocks is joined by blank lines; the rest keeps its text
    between the blocks."""
    spans, unclosed = _think_spans(text)
    reasoning = "\n\n".join(b for b in (text[s:e].strip() for _, _, s, e in spans) if b)
    rest, pos = [], 0
    for start, stop, _, _ in spans:
        rest.append(text[pos:start])
        pos = stop
    rest.append(text[pos:])
    return reasoning, "".join(rest), unclosed


def visible_text(text: str) -> tuple[str, bool]:
    """`text` with thinking blanked out (offsets kept), and whether a <think> was left open."""
    chars = list(text)
    spans, unclosed = _think_spans(text)
    for start, stop, _, _ in spans:
        _blank(chars, start, stop)
    return "".join(chars), unclosed


def _parse(text: str) -> ParseResult:
    visible, unclosed_think = visible_text(text)
    result = ParseResult()
    pos, index = 0, 0
    closes: dict[
        str, int
    ] = {}  # name -> next </name> at or after the last lookup (-1: none): keeps it linear

    def find_close(name: str, start: int) -> int:
        known = closes.get(name)
        if known is None or (known != -1 and known < start):
            known = closes[name] = visible.find(f"</{name}>", start)
        return known

    while (match := _TAG.search(visible, pos)) is not None:
        closing, name, attributes = match.group(1), match.group(2), match.group(3)
        pos = match.end()
        if closing:
            if name in ACTION_TAGS:
                index += 1
                result.items.append(
                    ParseError(name, index, f"found </{name}> with no <{name}> before it")
                )
            continue
        end = find_close(name, match.end())
        if name not in ACTION_TAGS and end == -1:
            continue  # prose like `a <b`, `List<T>` or a mention of `<bash_output>`, not a tag
        index += 1
        if end == -1:
            result.items.append(
                ParseError(
                    name,
                    index,
                    f"<{name}> is never closed; end the body with </{name}>",
                    text[match.end() :],
                )
            )
            continue
        body = text[match.end() : end]
        pos = end + len(name) + 3
        result.items.append(_one_tag(name, attributes, body, index))
    if unclosed_think:
        index += 1
        result.items.append(
            ParseError(
                "think",
                index,
                "<think> is never closed with </think>, so nothing after it "
                "runs (the reply may have hit the token limit); think less, then act",
            )
        )
    return result


def _one_tag(name: str, attributes: str, body: str, index: int) -> Action | ParseError:
    if name in OUTPUT_TAGS:
        return ParseError(
            name,
            index,
            f"<{name}> is written by the environment, not by you; "
            "end your reply after your actions and wait for the outputs",
            body,
        )
    if name in UNSUPPORTED_UPSTREAM:
        return ParseError(
            name,
            index,
            f"<{name}> (an upstream tool) is not available here: {UNSUPPORTED_UPSTREAM[name]}",
            body,
        )
    if name not in ACTION_TAGS:
        hint = _did_you_mean(name, list(ACTION_TAGS))
        return ParseError(
            name,
            index,
            f"unknown tag <{name}>{hint}; the tags are {', '.join(f'<{t}>' for t in ACTION_TAGS)}",
            body,
        )
    if attributes.strip():
        return ParseError(
            name,
            index,
            f"tags take no attributes ({attributes.strip()!r}); put every field in the YAML body",
            body,
        )
    if len(body) > MAX_BODY_CHARS:
        return ParseError(
            name,
            index,
            f"the body has {len(body):,} characters, more than {MAX_BODY_CHARS:,}; "
            "write large files in several steps",
            body,
        )
    return parse_body(name, body, index)


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without anchors/aliases: no exponential expansion, and `*.py` gets a hint."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                "aliases (*name) are not allowed; quote values that start with '*'",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _load_yaml(body: str) -> Any:
    return yaml.load(_body_lines(body), Loader=_NoAliasLoader)


def _body_lines(body: str) -> str:
    """The body as YAML text: the newline after the tag dropped, common indentation removed."""
    text = body.removeprefix("\n")
    return textwrap.dedent(text)


_YAML_HINTS = {
    "unknown escape character": "inside double quotes only YAML escapes work; use a block scalar (`content: |`) "
    "or single quotes for text with backslashes",
    "mapping values are not allowed": "a value contains ': '; quote the value or use a block scalar (`|`)",
    "alias": "a value starting with '*' must be quoted, e.g. pattern: \"*.py\"",
    "found character '\\t'": "YAML indentation must use spaces, not tabs",
    "could not find expected ':'": "every line must be `name: value`; multi-line text goes in a block scalar (`|`)",
    "expected <block end>": "check the indentation: list items and block scalars must be indented consistently",
}


def _yaml_problem(exc: yaml.YAMLError, body: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    where = ""
    if mark is not None:
        lines = _body_lines(body).splitlines() or [""]
        line = lines[min(mark.line, len(lines) - 1)]
        start = max(0, mark.column - 60)
        where = (
            f" at line {mark.line + 1}, column {mark.column + 1} of the body:\n"
            f"    {line[start : start + 120]}\n    {' ' * (mark.column - start)}^"
        )
    text = f"invalid YAML: {problem}" + (f" ({context})" if context else "") + where
    hints = [hint for key, hint in _YAML_HINTS.items() if key in str(problem) + str(context)]
    return text + (f"\nHint: {hints[0]}" if hints else "")


def _field_problem(err: dict[str, Any], model: type[Action]) -> str:
    loc = _loc(err.get("loc", ()))
    kind = err.get("type", "")
    value = err.get("input")
    if kind == "missing":
        return f"field '{loc}' is missing"
    if kind == "extra_forbidden":
        known = ", ".join(["action"] * bool(model.action_name) + list(model.model_fields))
        return f"'{loc}' is not a field here (fields: {known})"
    if kind.endswith("_type") or kind in ("literal_error", "bool_parsing"):
        wanted = err.get("msg", "").replace("Input should be ", "")
        hint = ""
        if kind == "string_type" and isinstance(value, (bool, int, float)):
            hint = (
                " (YAML reads yes/no/true/false and numbers as non-text; put the value in quotes)"
            )
        return f"field '{loc}' should be {wanted}, got {_type_name(value)} {_short(value)}{hint}"
    message = err.get("msg", "invalid").removeprefix("Value error, ")
    return f"field '{loc}': {message}" if loc else message


def _loc(parts: tuple[Any, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _type_name(value: Any) -> str:
    return {
        str: "text",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "a mapping",
        type(None): "nothing",
    }.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _did_you_mean(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word.lower(), options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _guess_mode(body: str) -> str | None:
    found = re.search(r"^\s*action:\s*['\"]?(\w+)", body, flags=re.MULTILINE)
    return found.group(1) if found else None


def _blank(chars: list[str], start: int, stop: int) -> None:
    for i in range(start, stop):
        if chars[i] != "\n":
            chars[i] = " "
