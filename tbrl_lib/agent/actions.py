"""The typed actions of the action language, and one correct example of each.

An action is what one tag of an assistant reply asks for: `<bash>`, `<file>` with
`action: edit`, ... Each is a small pydantic model; `ACTION_MODELS` maps (tag, action) to it,
so the parser needs no per-tag code. Field names follow the upstream Terminal-Bench-RL tools
so upstream trajectories parse. Models are strict: YAML that reads `yes` as a boolean or `1.0`
as a number where text is expected is an error, not a silent conversion. What is left out:
upstream's `collapse_context` tag and `end_after_cmd_success` field (not supported here; the
parser says so).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

ACTION_TAGS = ("todo", "scratchpad", "file", "search", "bash", "finish")
"""Tags the model may write (in the order the system prompt teaches them)."""


class Action(BaseModel):
    """Base of every action. `tag` and `action` say which tool and which of its modes."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    tag: ClassVar[str]
    action_name: ClassVar[str | None] = None

    @property
    def kind(self) -> str:
        """`bash`, `file.edit`, ... (used in logs, metrics and trajectory records)."""
        return f"{self.tag}.{self.action_name}" if self.action_name else self.tag

    def record(self) -> dict[str, Any]:
        """A JSON-able record; `action_from_record` turns it back into this action."""
        fields = self.model_dump(mode="json", exclude_none=True)
        if self.action_name:
            fields = {"action": self.action_name, **fields}
        return {"tag": self.tag, "fields": fields}


class TodoOperation(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    action: Literal["add", "complete", "delete", "view_all"]
    content: str | None = None
    task_id: int | None = None

    @model_validator(mode="after")
    def _needs(self) -> TodoOperation:
        if self.action == "add" and not (self.content and self.content.strip()):
            raise ValueError("operation 'add' needs a non-empty 'content'")
        if self.action in ("complete", "delete") and self.task_id is None:
            raise ValueError(
                f"operation '{self.action}' needs 'task_id' (a number from the todo list)"
            )
        return self


class TodoAction(Action):
    tag: ClassVar[str] = "todo"
    operations: list[TodoOperation] = Field(default_factory=list)
    view_all: bool = False

    @model_validator(mode="after")
    def _not_empty(self) -> TodoAction:
        if not self.operations and not self.view_all:
            raise ValueError("give at least one item in 'operations' or 'view_all: true'")
        return self


class ScratchpadAddNote(Action):
    tag: ClassVar[str] = "scratchpad"
    action_name: ClassVar[str | None] = "add_note"
    content: str = Field(min_length=1)


class ScratchpadViewAll(Action):
    tag: ClassVar[str] = "scratchpad"
    action_name: ClassVar[str | None] = "view_all_notes"


class FileRead(Action):
    tag: ClassVar[str] = "file"
    action_name: ClassVar[str | None] = "read"
    file_path: str = Field(min_length=1)
    offset: int = Field(default=1, ge=0)
    """First line shown, 1-based (0 is read as 1)."""
    limit: int | None = Field(default=None, ge=1)


class FileWrite(Action):
    tag: ClassVar[str] = "file"
    action_name: ClassVar[str | None] = "write"
    file_path: str = Field(min_length=1)
    content: str


class EditSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    old_string: str = Field(min_length=1)
    new_string: str
    replace_all: bool = False

    @model_validator(mode="after")
    def _differs(self) -> EditSpec:
        if self.old_string == self.new_string:
            raise ValueError("old_string and new_string are the same; nothing would change")
        return self


class FileEdit(Action):
    tag: ClassVar[str] = "file"
    action_name: ClassVar[str | None] = "edit"
    file_path: str = Field(min_length=1)
    old_string: str = Field(min_length=1)
    new_string: str
    replace_all: bool = False

    @model_validator(mode="after")
    def _differs(self) -> FileEdit:
        if self.old_string == self.new_string:
            raise ValueError("old_string and new_string are the same; nothing would change")
        return self


class FileMultiEdit(Action):
    tag: ClassVar[str] = "file"
    action_name: ClassVar[str | None] = "multi_edit"
    file_path: str = Field(min_length=1)
    edits: list[EditSpec] = Field(min_length=1)


class FileMetadata(Action):
    tag: ClassVar[str] = "file"
    action_name: ClassVar[str | None] = "metadata"
    file_paths: list[str] = Field(min_length=1)


class SearchGrep(Action):
    tag: ClassVar[str] = "search"
    action_name: ClassVar[str | None] = "grep"
    pattern: str = Field(min_length=1)
    path: str | None = None
    include: str | None = None


class SearchGlob(Action):
    tag: ClassVar[str] = "search"
    action_name: ClassVar[str | None] = "glob"
    pattern: str = Field(min_length=1)
    path: str | None = None


class SearchLs(Action):
    tag: ClassVar[str] = "search"
    action_name: ClassVar[str | None] = "ls"
    path: str | None = None
    ignore: list[str] = Field(default_factory=list)


class BashAction(Action):
    tag: ClassVar[str] = "bash"
    cmd: str = Field(min_length=1)
    block: bool = True
    """False: start in the background and return at once (pid and log path)."""
    timeout_secs: float | None = Field(default=None, gt=0)


class FinishAction(Action):
    tag: ClassVar[str] = "finish"
    message: str = ""


ACTION_MODELS: dict[tuple[str, str | None], type[Action]] = {
    (model.tag, model.action_name): model
    for model in (
        TodoAction,
        ScratchpadAddNote,
        ScratchpadViewAll,
        FileRead,
        FileWrite,
        FileEdit,
        FileMultiEdit,
        FileMetadata,
        SearchGrep,
        SearchGlob,
        SearchLs,
        BashAction,
        FinishAction,
    )
}
MODES: dict[str, list[str]] = {
    tag: [name for (t, name) in ACTION_MODELS if t == tag and name] for tag in ACTION_TAGS
}
"""Tags whose body picks a mode with `action:` -> the modes (todo, bash, finish have none)."""

EXAMPLES: dict[str, str] = {
    "todo": "operations:\n  - action: add\n    content: Run the test suite\n  - action: complete\n"
    "    task_id: 1\nview_all: true",
    "scratchpad.add_note": "action: add_note\ncontent: |\n  The config lives in /etc/app.yaml",
    "scratchpad.view_all_notes": "action: view_all_notes",
    "file.read": "action: read\nfile_path: /app/main.py\noffset: 1\nlimit: 100",
    "file.write": 'action: write\nfile_path: /app/run.sh\ncontent: |\n  #!/bin/bash\n  echo "$HOME"',
    "file.edit": 'action: edit\nfile_path: /app/main.py\nold_string: "retries = 1"\n'
    'new_string: "retries = 3"\nreplace_all: false',
    "file.multi_edit": "action: multi_edit\nfile_path: /app/main.py\nedits:\n"
    '  - old_string: "import os"\n    new_string: "import os\\nimport sys"\n'
    '  - old_string: "DEBUG = True"\n    new_string: "DEBUG = False"',
    "file.metadata": "action: metadata\nfile_paths:\n  - /app/main.py\n  - /app/data",
    "search.grep": 'action: grep\npattern: "def \\\\w+_config"\npath: /app\ninclude: "*.py"',
    "search.glob": 'action: glob\npattern: "**/*.py"\npath: /app',
    "search.ls": 'action: ls\npath: /app\nignore:\n  - "*.pyc"',
    "bash": "cmd: |\n  cd /app && python -m pytest -q\ntimeout_secs: 120",
    "finish": "message: Implemented the fix and checked it with the test suite.",
}
"""A correct body for every (tag, mode); shown in parse errors and checked by tests."""


def example_for(tag: str, mode: str | None = None) -> str:
    """A correct example tag (all modes of the tag when `mode` is unknown)."""
    keys = (
        [f"{tag}.{mode}"]
        if mode and f"{tag}.{mode}" in EXAMPLES
        else ([k for k in EXAMPLES if k == tag or k.startswith(tag + ".")])
    )
    return "\n".join(f"<{tag}>\n{EXAMPLES[k]}\n</{tag}>" for k in keys)


def render_action(tag: str, fields: dict[str, Any]) -> str:
    """An action tag with a YAML body that parses back to `fields` (multi-line text as `|`)."""

    class _Dumper(yaml.SafeDumper):
        pass

    def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _text)
    body = yaml.dump(fields, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000)
    return f"<{tag}>\n{body}</{tag}>"
