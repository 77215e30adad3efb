"""The policy seam: who writes the assistant turns.

`Policy.generate(conversation, max_new_tokens)` returns a `Generation`: the reply text and,
when the policy works in tokens, the exact ids. Token policies continue from
`conversation.token_ids` (everything so far, exactly as generated) and return the ids they
added before generating (`env_ids`: the first prompt, later the rendered observation), so
the episode can concatenate ids without ever re-tokenizing. Policies keep no per-episode
state, so one policy object serves hundreds of concurrent episodes.

Errors: `ContextOverflow` (the conversation no longer fits the model) and `PolicyError`
(the backend failed after its own retries: an infrastructure error, not a bad reply).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from tbrl_lib.tasks.model import Task


class PolicyError(RuntimeError):
    """The model backend failed (API down, garbage reply, out of retries)."""


class ContextOverflow(PolicyError):
    """The conversation is longer than the model's context window."""


@dataclass
class Conversation:
    """What a policy sees: the task, the messages so far and (for token policies) the ids."""

    task: Task
    messages: list[dict[str, str]]
    token_ids: list[int] = field(default_factory=list)
    """Prompt + every completion and observation so far, exactly as generated/added."""
    turn: int = 0
    deadline: float | None = None
    """`time.monotonic()` at which the episode's time runs out (None: no limit). A policy that
    can (`TokenPolicy`) stops generating there and returns the reply so far, with
    `finish_reason="time_limit"`."""


@dataclass
class Generation:
    text: str
    completion_ids: list[int] | None = None
    env_ids: list[int] | None = None
    """Ids the policy appended before generating (first turn: the whole prompt)."""
    logprobs: list[float] | None = None
    prompt_tokens: int = 0
    """Context length before this reply (from the tokenizer or the API's usage)."""
    completion_tokens: int = 0
    finish_reason: str | None = None
    """`stop` or `length` (hit max_new_tokens)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Backend details worth keeping (cache tokens, request id)."""


@runtime_checkable
class Policy(Protocol):
    name: str

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation: ...
