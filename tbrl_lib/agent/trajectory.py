"""`Trajectory`: everything one episode did, saved as one JSON line.

Messages (OpenAI style, as the model saw them), per-turn records (reply, actions, parse
errors, tool outputs, timings, token counts), the termination reason, the final todo list
and notes, and - when the policy works in tokens - the token ids:

- `prompt_ids`: the first prompt (system + task + generation prompt);
- `completion_ids`: every reply and every observation after it, concatenated exactly as
  generated/added (never re-tokenized);
- `env_mask`: aligned with `completion_ids`, 1 for tokens the model generated, 0 for tokens
  the environment added (TRL's `rollout_func` convention: loss only where the mask is 1);
- `logprobs`: aligned with `completion_ids` when the policy gives them (0.0 for env tokens).

Left out: the score. The verifier runs the task's tests afterwards, whatever the
termination reason (`tbrl_lib.rewards`).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tbrl_lib.agent.parser import split_thinking
from tbrl_lib.policies.base import Generation


class Termination(str, Enum):
    finished = "finished"
    """The model wrote <finish>."""
    no_action = "no_action"
    """A reply with no tag at all."""
    parse_error_streak = "parse_error_streak"
    """`max_parse_error_turns` replies in a row with only malformed tags."""
    max_turns = "max_turns"
    token_budget = "token_budget"
    time_limit = "time_limit"
    context_overflow = "context_overflow"
    resource_limit = "resource_limit"
    """The agent's commands hit the container's pids or memory limit (a fork bomb, a memory
    hog): the agent's doing, so the rollout is scored, not masked."""
    storage_limit = "storage_limit"
    """The agent's commands wrote past the sandbox's storage limit: the sandbox was removed at
    once to give the host its disk back, nothing is left to verify, and the rollout scores 0
    (the agent's doing, never masked)."""
    sandbox_broken = "sandbox_broken"
    """The agent's commands left the running container unusable (its shell died and no new
    one starts, the engine refuses an operation): the agent's doing, scored."""
    infra_error = "infra_error"
    """The sandbox or the model backend failed; rewards mask such rollouts."""


class ToolCall(BaseModel):
    kind: str
    """`bash`, `file.edit`, ... or `parse_error`."""
    action: dict[str, Any] | None = None
    """`Action.record()`; None for a parse error."""
    output: str
    ok: bool = True
    seconds: float = 0.0
    truncated_chars: int = 0


class Turn(BaseModel):
    index: int
    assistant: str
    calls: list[ToolCall] = Field(default_factory=list)
    observation: str | None = None
    policy_seconds: float = 0.0
    tools_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None

    @property
    def thinking(self) -> str:
        """The reply's reasoning: inside <think>...</think>, or before a bare </think>
        (`parser.split_thinking`)."""
        return split_thinking(self.assistant)[0]


class Trajectory(BaseModel):
    task_id: str
    policy: str
    messages: list[dict[str, str]]
    turns: list[Turn] = Field(default_factory=list)
    termination: Termination | None = None
    termination_message: str = ""
    error_kind: str | None = None
    """For infra errors and sandbox limits: the `SandboxError.kind` or exception type."""
    limit_exceeded: dict[str, Any] | None = None
    """For a sandbox limit: which (`kind`), its value (`limit`), how far the agent went
    (`used`, where measured: the MB a storage limit saw written) and the `unit`."""
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    env_mask: list[int] | None = None
    logprobs: list[float] | None = None
    todos: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    wall_seconds: float = 0.0
    limits: dict[str, Any] = Field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        """Length of the conversation so far (last prompt + last reply)."""
        if self.completion_ids is not None and self.prompt_ids is not None:
            return len(self.prompt_ids) + len(self.completion_ids)
        last = self.turns[-1] if self.turns else None
        return last.prompt_tokens + last.completion_tokens if last else 0

    @property
    def token_ids(self) -> list[int]:
        return (self.prompt_ids or []) + (self.completion_ids or [])

    def add_generation(self, gen: Generation) -> None:
        """Append a reply's ids (and the env ids the policy added before it)."""
        if gen.completion_ids is None:
            return
        env = list(gen.env_ids or [])
        if self.prompt_ids is None:
            self.prompt_ids, self.completion_ids, self.env_mask, self.logprobs = env, [], [], []
        else:
            self._extend(env, 0, [0.0] * len(env))
        logprobs = gen.logprobs if gen.logprobs is not None else [0.0] * len(gen.completion_ids)
        self._extend(list(gen.completion_ids), 1, logprobs)

    def _extend(self, ids: list[int], mask: int, logprobs: list[float]) -> None:
        assert (
            self.completion_ids is not None
            and self.env_mask is not None
            and self.logprobs is not None
        )
        self.completion_ids += ids
        self.env_mask += [mask] * len(ids)
        self.logprobs += list(logprobs)

    # -- JSONL ------------------------------------------------------------------
    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def save_jsonl(
        cls, trajectories: list[Trajectory] | Trajectory, path: str | Path, append: bool = False
    ) -> Path:
        items = [trajectories] if isinstance(trajectories, Trajectory) else trajectories
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if append else "w", encoding="utf-8") as f:
            for item in items:
                f.write(item.to_json() + "\n")
        return path

    @classmethod
    def load_jsonl(cls, path: str | Path) -> list[Trajectory]:
        out = []
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(cls.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValueError) as exc:
                raise ValueError(f"{path}:{n}: not a trajectory record: {exc}") from exc
        return out
