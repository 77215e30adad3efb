"""The system prompt documents exactly the tools and fields the code has, its examples
parse, and the numbers it states are the limits the code enforces."""

from __future__ import annotations

import re

import pytest

from tbrl_lib.agent.actions import ACTION_MODELS, ACTION_TAGS, MODES, TodoOperation
from tbrl_lib.agent.config import EpisodeLimits, ToolConfig
from tbrl_lib.agent.parser import parse_actions
from tbrl_lib.agent.prompts import initial_messages, system_prompt
from tests.agent.conftest import toy_task


def test_every_tag_mode_and_field_is_documented():
    prompt = system_prompt()
    for tag in ACTION_TAGS:
        assert f"<{tag}>" in prompt, tag
    for (tag, mode), model in ACTION_MODELS.items():
        if mode:
            assert f"action: {mode}" in prompt or f"`{mode}`" in prompt, (
                f"{tag}.{mode} undocumented"
            )
        for field in model.model_fields:
            assert re.search(rf"\b{field}\b", prompt), f"{tag}.{mode}: field {field} undocumented"
    for op in TodoOperation.model_fields["action"].annotation.__args__:
        assert f"`{op}`" in prompt or f"action: {op}" in prompt


def test_every_example_in_the_prompt_parses_and_covers_every_mode():
    prompt = system_prompt()
    blocks = [
        m.group(0)
        for m in re.finditer(r"^<(\w+)>\n.*?^</\1>$", prompt, flags=re.DOTALL | re.MULTILINE)
    ]
    result = parse_actions("\n".join(blocks))
    assert not result.errors, result.errors[0].message
    covered = {action.kind for action in result.actions}
    expected = {f"{t}.{m}" for t in ACTION_TAGS for m in MODES[t]} | {
        t for t in ACTION_TAGS if not MODES[t]
    }
    assert covered == expected
    assert len(result.actions) == len(blocks)


def test_only_documented_tags_exist():
    prompt = system_prompt()
    written = set(re.findall(r"^<(\w+)>$", prompt, flags=re.MULTILINE))
    assert written == set(ACTION_TAGS)


def test_stated_limits_are_the_configured_ones():
    limits = EpisodeLimits(
        max_turns=17,
        max_total_tokens=12345,
        max_parse_error_turns=4,
        time_limit_s=321,
        tools=ToolConfig(
            max_observation_chars=777,
            bash_default_timeout=11,
            bash_max_timeout=99,
            read_default_limit=55,
            metadata_max_paths=6,
            search_max_results=33,
        ),
    )
    prompt = system_prompt(limits)
    for text in (
        "after 17 replies",
        "12,345 tokens",
        "after 321 seconds",
        "cut to 777 characters",
        "defaults to 11",
        "at most\n99",
        "(default 55)",
        "up to\n6 paths",
        "at most 33 matches",
        "So do 4 replies",
    ):
        assert text in prompt, text
    assert "{{" not in prompt


def test_time_limit_defaults_to_the_task_timeout_and_task_is_the_user_turn():
    task = toy_task(timeout=432)
    messages = initial_messages(task)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "after 432 seconds" in messages[0]["content"]
    assert messages[1]["content"] == task.instruction


def test_bad_config_says_how_to_fix_it():
    with pytest.raises(ValueError, match="raise the maximum or lower the default"):
        ToolConfig(bash_default_timeout=700, bash_max_timeout=600)
