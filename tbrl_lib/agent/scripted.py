"""Policies that need no model: `noop`, `scripted` (fixed replies, for tests and demos) and
`oracle`, which acts out a task's reference solution through the action language (plan with
todos, explore read-only, write and run the solution, verify, finish). The oracle is the
smoke test of the whole loop - sandbox, tools, verifier - and a source of SFT demonstrations.
It knows nothing the task does not give it: no tests, only `task.solution`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tbrl_lib.agent.actions import render_action
from tbrl_lib.policies.base import Conversation, Generation, PolicyError

SOLUTION_PATH = "/tmp/tbrl-oracle/solve.sh"


class NoopPolicy:
    """Says it will do nothing and writes no action: the episode ends with `no_action`."""

    name = "noop"

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        return Generation(text="I will not take any action.")


class ScriptedPolicy:
    """Replies from a list (or a function of the conversation); an empty reply when out."""

    name = "scripted"

    def __init__(self, replies: Sequence[str] | Callable[[Conversation], str]) -> None:
        self.replies = replies

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        if callable(self.replies):
            text = self.replies(conversation)
        else:
            text = self.replies[conversation.turn] if conversation.turn < len(self.replies) else ""
        return Generation(text=text, completion_tokens=len(text) // 4)


class OraclePolicy:
    """Plan -> explore -> run the reference solution -> verify -> finish (four replies)."""

    name = "oracle"

    def __init__(self, solution_timeout: float = 600.0) -> None:
        self.solution_timeout = solution_timeout

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        task = conversation.task
        if not task.solution or not task.solution.strip():
            raise PolicyError(
                f"task {task.id} has no reference solution; the oracle cannot act it out "
                "(add solution/solve.sh to the task)"
            )
        steps = [self._plan, self._execute, self._verify, self._finish]
        text = steps[min(conversation.turn, len(steps) - 1)](task)
        return Generation(text=text, completion_tokens=len(text) // 4)

    def _plan(self, task) -> str:
        todo = render_action(
            "todo",
            {
                "operations": [
                    {"action": "add", "content": "Explore the working directory"},
                    {"action": "add", "content": "Apply the reference solution"},
                    {"action": "add", "content": "Check the result"},
                ],
                "view_all": True,
            },
        )
        explore = render_action("search", {"action": "ls", "path": "/app"})
        return (
            f"<think>\nI will plan, look around, then apply the known solution for task {task.id}.\n</think>\n"
            f"{todo}\n{explore}"
        )

    def _execute(self, task) -> str:
        write = render_action(
            "file", {"action": "write", "file_path": SOLUTION_PATH, "content": task.solution}
        )
        run = render_action(
            "bash",
            {"cmd": f"cd /app && bash {SOLUTION_PATH}", "timeout_secs": self.solution_timeout},
        )
        done = render_action(
            "todo",
            {
                "operations": [
                    {"action": "complete", "task_id": 1},
                    {"action": "complete", "task_id": 2},
                ]
            },
        )
        return f"{write}\n{run}\n{done}"

    def _verify(self, task) -> str:
        check = render_action(
            "bash",
            {"cmd": "cd /app && ls -la && (git status --short 2>/dev/null | head -n 20 || true)"},
        )
        done = render_action(
            "todo", {"operations": [{"action": "complete", "task_id": 3}], "view_all": True}
        )
        return f"{check}\n{done}"

    def _finish(self, task) -> str:
        return render_action(
            "finish",
            {"message": "Applied the reference solution and checked the working directory."},
        )
