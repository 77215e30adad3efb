"""The two tools that keep state in the episode, not in the container: `todo` and
`scratchpad`. Their contents are part of the trajectory (judges read the plan)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tbrl_lib.agent.actions import ScratchpadAddNote, ScratchpadViewAll, TodoAction
from tbrl_lib.agent.tool_base import ToolError


@dataclass
class TodoItem:
    id: int
    content: str
    done: bool = False


@dataclass
class TodoTool:
    tag = "todo"
    items: list[TodoItem] = field(default_factory=list)
    next_id: int = 1

    async def __call__(self, action: TodoAction) -> str:
        lines: list[str] = []
        errors: list[str] = []
        show = action.view_all
        for n, op in enumerate(action.operations, start=1):
            if op.action == "add":
                item = TodoItem(self.next_id, op.content.strip())
                self.items.append(item)
                self.next_id += 1
                lines.append(f"Added todo [{item.id}]: {item.content}")
            elif op.action == "view_all":
                show = True
            else:
                item = self._find(op.task_id)
                if item is None:
                    errors.append(
                        f"operation {n} ({op.action}): no todo with id {op.task_id}; ids are "
                        f"{', '.join(str(i.id) for i in self.items) or 'none yet'}"
                    )
                elif op.action == "complete":
                    item.done = True
                    lines.append(f"Completed todo [{item.id}]: {item.content}")
                else:
                    self.items.remove(item)
                    lines.append(f"Deleted todo [{item.id}]: {item.content}")
        if show:
            lines.append("\n" + self.render())
        if errors and not lines:
            raise ToolError("; ".join(errors))
        return "\n".join(lines + [f"[ERROR] {e}" for e in errors]).strip("\n")

    def render(self) -> str:
        if not self.items:
            return "Todo List: (empty)"
        return "Todo List:\n" + "\n".join(
            f"[{'x' if i.done else ' '}] [{i.id}] {i.content}" for i in self.items
        )

    def _find(self, task_id: int | None) -> TodoItem | None:
        return next((item for item in self.items if item.id == task_id), None)


@dataclass
class ScratchpadTool:
    tag = "scratchpad"
    notes: list[str] = field(default_factory=list)

    async def __call__(self, action: ScratchpadAddNote | ScratchpadViewAll) -> str:
        if isinstance(action, ScratchpadAddNote):
            self.notes.append(action.content.rstrip("\n"))
            return f"Added note {len(self.notes)} to scratchpad"
        if not self.notes:
            return "Scratchpad is empty"
        return (
            f"Scratchpad ({len(self.notes)} note{'s' * (len(self.notes) != 1)}):\n"
            + "\n\n".join(f"Note {n}:\n{note}" for n, note in enumerate(self.notes, start=1))
        )
