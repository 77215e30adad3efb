"""The three LLM roles of the synthesis pipeline (the fourth, the validator, is code).

- proposer: one task idea for a category/difficulty, told which existing titles to avoid;
- builder: the full task as structured fields, which `spec_to_task` turns into a `Task`
  (field errors become feedback for the next round, naming the field);
- critic: does each test check what the instruction asks, and nothing else?

Prompts are markdown files in `tbrl_lib/synth/prompts/`; the JSON schemas of the answers
live here next to the code that reads them.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from pydantic import ValidationError

from tbrl_lib.synth.families.base import BASE_IMAGE
from tbrl_lib.synth.llm import CostMeter, ScopedMeter, StructuredLLM, Tool, ask_metered
from tbrl_lib.tasks.model import Difficulty, Environment, Provenance, Task, Tests

Meter = CostMeter | ScopedMeter

STR = {"type": "string"}

PROPOSE = Tool(
    "propose_task",
    "a proposal for one terminal task",
    {
        "type": "object",
        "properties": {
            "title": STR,
            "summary": STR,
            "starting_state": STR,
            "success_check": STR,
            "skills": {"type": "array", "items": STR},
        },
        "required": ["title", "summary", "starting_state", "success_check"],
    },
)

BUILD = Tool(
    "build_task",
    "a complete runnable terminal task",
    {
        "type": "object",
        "properties": {
            "instruction": STR,
            "dockerfile": STR,
            "files": {"type": "object", "additionalProperties": STR},
            "tests_py": STR,
            "weights": {"type": "object", "additionalProperties": {"type": "number"}},
            "solution_sh": STR,
            "tags": {"type": "array", "items": STR},
        },
        "required": ["instruction", "dockerfile", "tests_py", "weights", "solution_sh"],
    },
)

REVIEW = Tool(
    "review_task",
    "a review of instruction/test alignment",
    {
        "type": "object",
        "properties": {
            "aligned": {"type": "boolean"},
            "issues": {"type": "array", "items": STR},
            "summary": STR,
        },
        "required": ["aligned", "issues"],
    },
)


class SpecError(ValueError):
    """The builder's answer cannot become a Task; the message names the field and the fix."""


@cache
def prompt(name: str) -> str:
    return (resources.files("tbrl_lib.synth") / "prompts" / f"{name}.md").read_text()


async def propose(
    llm: StructuredLLM, meter: Meter, category: str, difficulty: Difficulty, avoid_titles: list[str]
) -> dict[str, Any]:
    avoid = "\n".join(f"- {t}" for t in avoid_titles[:60]) or "- (none yet)"
    user = (
        f"Category: {category}\nDifficulty: {difficulty.value}\n\n"
        f"Existing tasks to stay clearly different from:\n{avoid}\n"
    )
    answer = await ask_metered(llm, meter, "proposer", prompt("proposer"), user, PROPOSE)
    return _require(answer.data, PROPOSE)


async def build(
    llm: StructuredLLM,
    meter: Meter,
    proposal: dict[str, Any],
    difficulty: Difficulty,
    previous: dict[str, Any] | None,
    feedback: list[str],
) -> dict[str, Any]:
    user = f"Difficulty: {difficulty.value}\nProposal:\n{json.dumps(proposal, indent=2)}\n"
    if previous is not None:
        user += (
            f"\nYour previous version:\n{json.dumps(previous, indent=2)}\n"
            "\nIt failed. Fix these problems and return the whole task again:\n"
            + "\n".join(f"- {f}" for f in feedback)
            + "\n"
        )
    answer = await ask_metered(llm, meter, "builder", prompt("builder"), user, BUILD)
    return _require(answer.data, BUILD)


async def review(llm: StructuredLLM, meter: Meter, task: Task) -> dict[str, Any]:
    user = (
        f"Instruction:\n{task.instruction}\n\nDockerfile:\n{task.environment.dockerfile}\n\n"
        f"Files: {sorted(task.environment.files)}\n\nTests (weights "
        f"{json.dumps(task.tests.weights)}):\n{task.tests.pytest}\n\n"
        f"Reference solution:\n{task.solution}\n"
    )
    answer = await ask_metered(llm, meter, "critic", prompt("critic"), user, REVIEW)
    data = _require(answer.data, REVIEW)
    if not isinstance(data["aligned"], bool):
        raise SpecError(f"critic's `aligned` must be true or false, got {data['aligned']!r}")
    return data


def spec_to_task(
    spec: dict[str, Any],
    task_id: str,
    category: str,
    difficulty: Difficulty,
    title: str | None,
    location: str,
) -> Task:
    """The builder's fields as a `Task`; any problem is a `SpecError` naming the field."""
    dockerfile = str(spec.get("dockerfile", ""))
    first = next(
        (
            ln.strip()
            for ln in dockerfile.splitlines()
            if ln.strip() and not ln.strip().startswith("#")
        ),
        "",
    )
    if first.split()[1:2] != [BASE_IMAGE]:
        raise SpecError(
            f"dockerfile: the first instruction must be `FROM {BASE_IMAGE}`, got {first[:80]!r}"
        )
    files = spec.get("files") or {}
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise SpecError("files: must be an object mapping relative paths to text contents")
    try:
        return Task(
            id=task_id,
            instruction=spec["instruction"],
            difficulty=difficulty,
            category=category,
            title=title,
            tags=["synthetic", "llm", *spec.get("tags", [])],
            environment=Environment(dockerfile=dockerfile, files=files),
            tests=Tests(pytest=spec["tests_py"], weights=spec["weights"]),
            solution=spec["solution_sh"],
            provenance=Provenance(source_format="synth-llm", location=location),
        )
    except ValidationError as err:
        issues = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'task'}: {e['msg']}" for e in err.errors()
        )
        raise SpecError(f"the task does not validate: {issues}") from None


def _require(data: dict[str, Any], tool: Tool) -> dict[str, Any]:
    missing = [k for k in tool.schema["required"] if k not in data]
    if missing:
        raise SpecError(f"{tool.name}: answer lacks required fields {missing}")
    return data
