"""`Toolbox`: one episode's tools, and how their outputs become the next user message.

`await toolbox.run(action)` dispatches on the action's tag, caps the output, and turns a
`ToolError` into an error the model reads. `SandboxError` is not caught: it ends the
episode as `infra_error`. `format_observation` wraps each output in `<tag_output>` (and
parse errors in `<parse_error>`), in the order the actions were written.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tbrl_lib.agent.actions import Action, FinishAction
from tbrl_lib.agent.config import ToolConfig
from tbrl_lib.agent.parser import ParseError, parse_actions
from tbrl_lib.agent.tool_base import Tool, ToolError, ToolResult, cap_output
from tbrl_lib.agent.tool_bash import BashTool, FinishTool
from tbrl_lib.agent.tool_file import FileTool
from tbrl_lib.agent.tool_search import SearchTool
from tbrl_lib.agent.tool_state import ScratchpadTool, TodoTool
from tbrl_lib.sandbox.base import Sandbox


class Toolbox:
    def __init__(
        self,
        sandbox: Sandbox,
        config: ToolConfig | None = None,
        time_left: Callable[[], float] | None = None,
    ) -> None:
        self.config = config or ToolConfig()
        self.todo = TodoTool()
        self.scratchpad = ScratchpadTool()
        tools: list[Tool] = [
            self.todo,
            self.scratchpad,
            FileTool(sandbox, self.config),
            SearchTool(sandbox, self.config),
            BashTool(sandbox, self.config, time_left),
            FinishTool(),
        ]
        self.tools: dict[str, Tool] = {tool.tag: tool for tool in tools}

    async def run(self, action: Action) -> ToolResult:
        try:
            output, ok = await self.tools[action.tag](action), True
        except ToolError as exc:
            output, ok = f"[ERROR] {exc}", False
        text, dropped = cap_output(output, self.config.max_observation_chars)
        return ToolResult(
            text, ok=ok, finished=isinstance(action, FinishAction), truncated_chars=dropped
        )


def format_observation(entries: list[tuple[Action | ParseError, ToolResult | None]]) -> str:
    """The user message after a turn: one block per tag, in order."""
    blocks = []
    for item, result in entries:
        if isinstance(item, ParseError):
            blocks.append(f"<parse_error>\n{item.message}\n</parse_error>")
        elif result is not None:
            blocks.append(f"<{item.tag}_output>\n{result.output}\n</{item.tag}_output>")
    return "\n\n".join(blocks)


def monotonic_deadline(seconds: float) -> Callable[[], float]:
    """A `time_left()` function for `seconds` from now."""
    end = time.monotonic() + seconds
    return lambda: end - time.monotonic()


async def run_reply(toolbox: Toolbox, reply: str) -> str:
    """Parse an assistant reply, run its actions in order, return the observation the model
    would read (for notebooks and demos; the episode loop does the same with bookkeeping)."""
    entries: list[tuple[Action | ParseError, ToolResult | None]] = []
    for item in parse_actions(reply).items:
        entries.append((item, None if isinstance(item, ParseError) else await toolbox.run(item)))
    return format_observation(entries)
