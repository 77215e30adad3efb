"""The numbers that bound an episode and its tools, in one place.

The system prompt is rendered from these same objects, so what the prompt tells the model
(timeouts, caps, turn limits) is what the code enforces. Validation says how to fix a bad
value. What is left out: per-task overrides live on `Task.limits` (the agent timeout there
becomes `EpisodeLimits.time_limit_s` when that is None).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ToolConfig(BaseModel):
    """Caps and defaults of the tools (see `tbrl_lib.agent.tools`)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_observation_chars: int = Field(default=10_000, ge=200)
    """Every tool output is cut to this many characters (head and tail kept, notice between)."""
    bash_default_timeout: float = Field(default=30.0, gt=0)
    """Seconds a `<bash>` command may run when it gives no `timeout_secs`."""
    bash_max_timeout: float = Field(default=600.0, gt=0)
    """Largest `timeout_secs` a `<bash>` command may ask for."""
    read_default_limit: int = Field(default=2000, ge=1)
    """Lines shown by `file read` when no `limit` is given."""
    read_max_line_chars: int = Field(default=2000, ge=20)
    """Longer lines are cut in `file read` output."""
    read_max_bytes: int = Field(default=5_000_000, ge=1024)
    """Files larger than this are refused by read/edit (use bash: head, sed -n)."""
    metadata_max_paths: int = Field(default=10, ge=1)
    """Paths one `file metadata` action may ask about."""
    search_max_results: int = Field(default=200, ge=1)
    """Matches (grep) or paths (glob, ls) a `search` action shows."""
    search_timeout: float = Field(default=60.0, gt=0)
    """Seconds a grep/glob/ls may take before it is stopped."""

    @model_validator(mode="after")
    def _check(self) -> ToolConfig:
        if self.bash_default_timeout > self.bash_max_timeout:
            raise ValueError(
                f"bash_default_timeout ({self.bash_default_timeout}) exceeds bash_max_timeout "
                f"({self.bash_max_timeout}); raise the maximum or lower the default"
            )
        return self


class EpisodeLimits(BaseModel):
    """When `run_episode` stops (each limit maps to a `Termination` reason)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_turns: int = Field(default=50, ge=1)
    """Assistant replies per episode (`Termination.max_turns`)."""
    max_total_tokens: int = Field(default=32_768, ge=256)
    """Prompt + completion tokens of the whole conversation so far (`token_budget`); training
    also takes it as the trainer's and vLLM's sequence length."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """Wall clock for the episode; None: the task's `limits.agent_timeout_sec`."""
    max_tokens_per_turn: int = Field(default=4096, ge=16)
    """Most tokens the policy may generate in one reply (also capped by the budget left)."""
    max_parse_error_turns: int = Field(default=3, ge=1)
    """Replies in a row with only malformed actions before `parse_error_streak`."""
    tools: ToolConfig = Field(default_factory=ToolConfig)
    """Caps and defaults of the tools (the system prompt states them)."""
    system_prompt: Literal["full", "compact"] = "full"
    """`full` teaches every tool with examples (~2k tokens); `compact` is a few lines for
    models with a short context budget (the tiny CPU demo model), same action language."""

    def time_limit_for(self, task_timeout: float) -> float:
        return self.time_limit_s if self.time_limit_s is not None else task_timeout
