"""The agent: the XML/YAML action language, its tools, the system prompt, the episode loop.

Public API: `parse_actions`, `ParseResult`, `run_episode`, `EpisodeLimits`, `Trajectory`,
`Termination` (see the modules of the same names).
"""

from tbrl_lib.agent.config import EpisodeLimits, ToolConfig
from tbrl_lib.agent.parser import ParseError, ParseResult, parse_actions

__all__ = ["EpisodeLimits", "ParseError", "ParseResult", "ToolConfig", "parse_actions"]
