"""The system prompt (`system_prompt.md` in this package) and the opening messages.

The prompt is a markdown file with `{{name}}` placeholders filled from `EpisodeLimits` and
`ToolConfig`, so every number it states is the number the code enforces. An unknown or
unfilled placeholder is an error, never left in the text. What is left out: few-shot
demonstrations (the oracle policy produces those as trajectories instead).
"""

from __future__ import annotations

import re
from importlib import resources
from typing import TYPE_CHECKING

from tbrl_lib.agent.config import EpisodeLimits

if TYPE_CHECKING:
    from tbrl_lib.tasks.model import Task

PROMPT_FILES = {"full": "system_prompt.md", "compact": "system_prompt_compact.md"}
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def prompt_values(
    limits: EpisodeLimits | None = None, task_timeout: float = 900.0
) -> dict[str, str]:
    """The values the placeholders take, as text."""
    limits = limits or EpisodeLimits()
    tools = limits.tools
    values: dict[str, object] = {
        **tools.model_dump(),
        "max_turns": limits.max_turns,
        "max_total_tokens": limits.max_total_tokens,
        "max_parse_error_turns": limits.max_parse_error_turns,
        "time_limit": limits.time_limit_for(task_timeout),
    }
    return {key: _number(value) for key, value in values.items()}


def system_prompt(limits: EpisodeLimits | None = None, task_timeout: float = 900.0) -> str:
    """The rendered system prompt."""
    limits = limits or EpisodeLimits()
    prompt_file = PROMPT_FILES[limits.system_prompt]
    template = resources.files("tbrl_lib.agent").joinpath(prompt_file).read_text("utf-8")
    values = prompt_values(limits, task_timeout)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise KeyError(
                f"{prompt_file} uses {{{{{name}}}}}, which no setting provides; known: {sorted(values)}"
            )
        return values[name]

    return _PLACEHOLDER.sub(fill, template)


def initial_messages(task: Task, limits: EpisodeLimits | None = None) -> list[dict[str, str]]:
    """OpenAI-style opening: the system prompt, then the task instruction as the user turn."""
    return [
        {"role": "system", "content": system_prompt(limits, task.limits.agent_timeout_sec)},
        {"role": "user", "content": task.instruction},
    ]


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}" if value >= 10_000 else str(int(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if value >= 10_000 else str(value)
    return str(value)
