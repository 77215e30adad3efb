"""The `bash` tool (the sandbox's one persistent shell: `cd`/`export` persist) and `finish`.

Foreground commands get a timeout (the action's `timeout_secs`, else the default; never
more than the maximum, nor than the time left in the episode); a command that runs out is
stopped by the sandbox and the model is told. `block: false` starts the command in the
background with its output in a log file and returns at once. Left out: interactive
programs (no terminal) and stdin.
"""

from __future__ import annotations

from collections.abc import Callable

from tbrl_lib.agent.actions import BashAction, FinishAction
from tbrl_lib.agent.config import ToolConfig
from tbrl_lib.agent.tool_base import ToolError, q
from tbrl_lib.sandbox.base import Sandbox


class BashTool:
    tag = "bash"

    def __init__(
        self, sandbox: Sandbox, config: ToolConfig, time_left: Callable[[], float] | None = None
    ) -> None:
        self.sandbox = sandbox
        self.config = config
        self.time_left = time_left or (lambda: float("inf"))
        self.background_jobs = 0

    async def __call__(self, action: BashAction) -> str:
        if not action.block:
            return await self._background(action.cmd)
        notes = []
        timeout = action.timeout_secs or self.config.bash_default_timeout
        if timeout > self.config.bash_max_timeout:
            notes.append(
                f"[timeout_secs {timeout:g} is above the maximum {self.config.bash_max_timeout:g}; "
                f"used {self.config.bash_max_timeout:g}]"
            )
            timeout = self.config.bash_max_timeout
        left = self.time_left()
        if left <= 1:
            raise ToolError("the episode's time limit is reached; the command was not run")
        if timeout > left:
            if timeout - left > 1:
                notes.append(f"[timeout lowered to {left:.0f}s: the episode's time limit is near]")
            timeout = left
        result = await self.sandbox.run(action.cmd, timeout=timeout)
        text = result.output if result.output else "(no output)"
        if result.timed_out:
            notes.append(
                f"[timed out after {timeout:g}s and stopped; for long jobs raise timeout_secs "
                f"(at most {self.config.bash_max_timeout:g}) or run it in the background with block: false]"
            )
        elif result.exit_code not in (0, None):
            notes.append(f"[exit code {result.exit_code}]")
        return "\n".join([text.rstrip("\n"), *notes])

    async def _background(self, cmd: str) -> str:
        self.background_jobs += 1
        log = f"/tmp/tbrl-background-{self.background_jobs}.log"
        script = (
            f"nohup bash -c {q(cmd)} > {log} 2>&1 < /dev/null & __pid=$!; disown $__pid 2>/dev/null; "
            "echo $__pid; unset __pid"
        )
        result = await self.sandbox.run(script, timeout=30)
        pid = result.output.strip().split("\n")[-1]
        if not pid.isdigit():
            raise ToolError(
                f"could not start the background command: {result.output.strip()[:300]}"
            )
        return (
            f"Started in the background: pid {pid}; output goes to {log}\n"
            f"(check it with: tail -n 50 {log}; stop it with: kill {pid})"
        )


class FinishTool:
    tag = "finish"

    async def __call__(self, action: FinishAction) -> str:
        return "Episode finished." + (f" Your message: {action.message}" if action.message else "")
