"""The agent: the XML/YAML action language, its tools, the system prompt, the episode loop.

Public API: `parse_actions` -> `ParseResult(actions, errors)`; `run_episode(task, policy,
sandbox, limits)` -> `Trajectory` (with a `Termination`); `EpisodeLimits`, `ToolConfig`;
`prompts.system_prompt()` and `prompts.initial_messages(task)`.
"""

from tbrl_lib.agent.config import EpisodeLimits, ToolConfig
from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.parser import ParseError, ParseResult, parse_actions
from tbrl_lib.agent.trajectory import Termination, Trajectory, Turn

__all__ = [
    "EpisodeLimits",
    "ParseError",
    "ParseResult",
    "Termination",
    "ToolConfig",
    "Trajectory",
    "Turn",
    "parse_actions",
    "run_episode",
]
