"""todo and scratchpad: batched operations, ids, errors that name the bad id."""

from __future__ import annotations

import asyncio

from tbrl_lib.agent.parser import parse_actions
from tbrl_lib.agent.tool_base import ToolError, cap_output
from tbrl_lib.agent.tool_state import ScratchpadTool, TodoTool


def run(tool, text):
    (action,) = parse_actions(text).actions
    return asyncio.run(tool(action))


def test_todo_batches_add_complete_delete_and_view():
    todo = TodoTool()
    out = run(
        todo,
        "<todo>\noperations:\n  - action: add\n    content: a\n  - action: add\n    content: b\n"
        "  - action: add\n    content: c\n</todo>",
    )
    assert out.splitlines() == ["Added todo [1]: a", "Added todo [2]: b", "Added todo [3]: c"]
    out = run(
        todo,
        "<todo>\noperations:\n  - action: complete\n    task_id: 1\n  - action: delete\n    task_id: 2\n"
        "view_all: true\n</todo>",
    )
    assert out.endswith("Todo List:\n[x] [1] a\n[ ] [3] c")
    out = run(
        todo,
        "<todo>\noperations:\n  - action: add\n    content: d\n  - action: complete\n    task_id: 9\n</todo>",
    )
    assert (
        "Added todo [4]: d" in out
        and "[ERROR] operation 2 (complete): no todo with id 9; ids are 1, 3, 4" in out
    )


def test_todo_all_bad_is_an_error():
    try:
        run(TodoTool(), "<todo>\noperations:\n  - action: delete\n    task_id: 1\n</todo>")
    except ToolError as exc:
        assert "ids are none yet" in str(exc)
    else:
        raise AssertionError("expected ToolError")


def test_scratchpad_notes_are_numbered():
    pad = ScratchpadTool()
    assert run(pad, "<scratchpad>\naction: view_all_notes\n</scratchpad>") == "Scratchpad is empty"
    assert (
        run(pad, "<scratchpad>\naction: add_note\ncontent: |\n  first\n</scratchpad>")
        == "Added note 1 to scratchpad"
    )
    run(pad, "<scratchpad>\naction: add_note\ncontent: second\n</scratchpad>")
    assert run(pad, "<scratchpad>\naction: view_all_notes\n</scratchpad>") == (
        "Scratchpad (2 notes):\nNote 1:\nfirst\n\nNote 2:\nsecond"
    )


def test_cap_output_keeps_head_and_tail():
    text, dropped = cap_output("a" * 600 + "b" * 600, 1000)
    assert dropped == 200 and text.startswith("a" * 600) and text.endswith("b" * 400)
    assert "200 characters omitted" in text
    assert cap_output("short", 1000) == ("short", 0)
