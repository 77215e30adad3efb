"""The agent: the XML/YAML action language, its tools, the system prompt, the episode loop.

Public API: `parse_actions` -> `ParseResult(actions, errors)`; `run_episode(task, policy,
sandbox, limits)` -> `Trajectory` (with a `Termination`); `EpisodeLimits`, `ToolConfig`;
`system_prompt()` and `initial_messages(task)`; `Toolbox(sandbox)` and `run_reply(toolbox,
reply)`, the tools on one reply (notebook 02).
"""

from tbrl_lib.agent.config import EpisodeLimits, ToolConfig
from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.parser import ParseError, ParseResult, parse_actions
from tbrl_lib.agent.prompts import initial_messages, system_prompt
from tbrl_lib.agent.toolbox import Toolbox, run_reply
from tbrl_lib.agent.trajectory import Termination, Trajectory, Turn

__all__ = [
    "EpisodeLimits",
    "ParseError",
    "ParseResult",
    "Termination",
    "ToolConfig",
    "Toolbox",
    "Trajectory",
    "Turn",
    "initial_messages",
    "parse_actions",
    "run_episode",
    "run_reply",
    "system_prompt",
]
