"""The judge seam: what a judge gets, what it returns, and how it fails.

A `Judge` scores *how* an agent worked (the process), not whether the tests passed. Every
judge takes a `JudgeInput` (task instruction, environment description, trajectory messages)
and returns a `JudgeResult` with a score in [0, 1], the prompt version that produced it, and
usage/cost (`tbrl_lib.llm_api.Usage`, as every LLM call reports it); or raises `JudgeError`.
`retryable=True` on a `JudgeError` (429, 529, 5xx, timeouts) tells the chain to fall back to
the next judge; a reply that cannot be parsed even after one format-correction retry raises
`JudgeFormatError` (also a fallback reason).
A judge never returns NaN and never turns its own failure into a 0.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from tbrl_lib.llm_api import Usage


@dataclass(frozen=True)
class JudgeInput:
    instruction: str
    environment: str
    """The task's environment description (its Dockerfile text)."""
    messages: tuple[dict[str, Any], ...]
    """OpenAI-style chat messages of the trajectory (the task first)."""
    task_id: str = ""

    @classmethod
    def from_messages(
        cls,
        messages: list[dict[str, Any]],
        environment: str = "",
        instruction: str | None = None,
        task_id: str = "",
    ) -> JudgeInput:
        """Build from a trajectory; the instruction defaults to the first user message."""
        msgs = tuple({"role": m["role"], "content": _text(m.get("content"))} for m in messages)
        if instruction is None:
            instruction = next((m["content"] for m in msgs if m["role"] == "user"), "")
        return cls(instruction=instruction, environment=environment, messages=msgs, task_id=task_id)

    def digest(self, prompt_version: str = "") -> str:
        """Hash of everything the judge sees (cache key, with the prompt version)."""
        blob = json.dumps(
            [prompt_version, self.instruction, self.environment, self.messages],
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class JudgeResult:
    score: float
    judge: str
    """Name of the judge that produced the score (after any fallback)."""
    prompt_version: str
    subscores: dict[str, float] = field(default_factory=dict)
    caps: list[str] = field(default_factory=list)
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    fallbacks: list[str] = field(default_factory=list)
    """`judge: reason` for every judge that failed before this one answered."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class JudgeError(RuntimeError):
    """A judge could not produce a score. `retryable`: overload, rate limit, 5xx, timeout."""

    def __init__(self, message: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class JudgeFormatError(JudgeError):
    """The judge answered, but no score could be read from it (after a correction retry)."""


@runtime_checkable
class Judge(Protocol):
    name: str
    prompt_version: str

    async def score(self, item: JudgeInput) -> JudgeResult: ...


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)
