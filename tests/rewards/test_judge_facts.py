"""Trajectory facts: each action paired with its own tool result, and failure read from the
observation format (tbrl's tools and the upstream ones), not from words anywhere in the text."""

from __future__ import annotations

import pytest

from tbrl_lib.agent.actions import BashAction, FileEdit, FileRead, FileWrite, SearchLs
from tbrl_lib.agent.actions import render_action as act
from tbrl_lib.rewards.judges.facts import (
    checks_work,
    command_class,
    failure_of,
    touched_paths,
    trajectory_facts,
)

TODO = act("todo", {"operations": [{"action": "add", "content": "look"}]})
LS = act("search", {"action": "ls", "path": "/app"})


def _messages(*turns: str) -> list[dict]:
    roles = ["assistant", "user"]
    return [{"role": "user", "content": "Do the task."}] + [
        {"role": roles[i % 2], "content": text} for i, text in enumerate(turns)
    ]


def test_actions_pair_with_their_own_results_in_order():
    reply = TODO + "\n<bash>\ncmd: [broken\n</bash>\n" + LS + "\n" + act("bash", {"cmd": "false"})
    observation = (
        "<todo_output>\nAdded todo [1]: look\n</todo_output>\n\n<parse_error>\n[ERROR] Tag 2"
        "\n</parse_error>\n\n<search_output>\n/app: 0 entries\n</search_output>\n\n"
        "<bash_output>\n(no output)\n[exit code 1]\n</bash_output>"
    )
    (reply_fact,) = trajectory_facts(_messages(reply, observation))
    assert [c.kind for c in reply_fact.calls] == ["todo", "parse_error", "search.ls", "bash"]
    assert [c.ok for c in reply_fact.calls] == [True, False, True, False]
    assert (
        reply_fact.calls[3].failure == "exit code 1"
        and reply_fact.calls[2].output == "/app: 0 entries"
    )


@pytest.mark.parametrize(
    "tag, body, cmd, failure",
    [
        # tbrl's tools
        ("file", "[ERROR] old_string was not found in /app/convert.py", "", "tool error"),
        (
            "bash",
            "sed: -e expression #1, char 24: unterminated `s' command\n[exit code 1]",
            "",
            "exit code 1",
        ),
        ("bash", "(no output)\n[exit code 1]", "grep -c ERROR /app/log", ""),  # grep's "no match"
        ("bash", "main: line 1: sortt: command not found", "", "shell error"),  # exit 0: a pipeline
        ("bash", "cat: /app/story: No such file or directory", "", "shell error"),
        ("bash", "[timed out after 30s and stopped; ...]", "", "timed out"),
        (
            "bash",
            "Traceback (most recent call last):\n  File \"x\"\nKeyError: 'a'",
            "",
            "exception",
        ),
        # the upstream tools' own reports
        (
            "file",
            "Error editing file: sed: -e expression #1, char 5: unterminated `s' command",
            "",
            "tool error",
        ),
        ("file", "File not found: /var/run/secrets/token", "", "tool error"),
        ("file", "/etc/kubernetes/manifests: Not found", "", "tool error"),
        ("bash", "bash: line 1: kubectl: command not found\n", "", "shell error"),
        ("bash", "Command timed out after 30 seconds", "", "timed out"),
        # successes, including error words that are the data under study
        ("file", "Successfully wrote to /app/resume_backup.sh", "", ""),
        ("search", "No files found matching pattern", "", ""),
        (
            "bash",
            "2024-01-01 ERROR [db] connection refused\n2024-01-01 INFO [api] up",
            "cat app.log",
            "",
        ),
    ],
)
def test_failure_is_read_from_the_observation_format(tag, body, cmd, failure):
    assert failure_of(tag, body, cmd) == failure


@pytest.mark.parametrize(
    "cmd, kind",
    [
        ("ls -la /app && cat /app/x | head", "read"),
        ("cd /app && ls -la && (git status --short 2>/dev/null | head -n 20 || true)", "read"),
        ('printenv | grep -i "SERVICE\\|HOST"', "read"),  # a quoted | is not a pipe
        ("python3 -m json.tool /app/summary.json", "read"),
        ("python3 /app/convert.py 100 C", "probe"),
        ("pipreqs /app/src --force", "probe"),  # an unknown tool runs, it is not known to write
        ("cd /app && python -m pytest -q", "probe"),
        ("echo 3 > /app/count.txt", "change"),
        ("sed -i 's/a/b/' /app/x", "change"),
        (
            "cd /app && python3 - <<'EOF'\nimport json\njson.dump({}, open('o.json', 'w'))\nEOF",
            "change",
        ),
        ("pip install pipreqs", "setup"),
        ("cd /app && apt-get update && apt-get install -y jq", "setup"),
        # words it was given, printed: no evidence of anything
        ("echo 'Verification: all checks passed'", "say"),
        ("printf 'verified\\n'; true", "say"),
        ("echo $(cat /app/count.txt)", "read"),  # a substitution reads the file
        ("echo verified > /app/status.txt", "change"),
    ],
)
def test_bash_commands_are_classed_by_what_they_ask_for(cmd, kind):
    assert command_class(BashAction(cmd=cmd)) == kind


def test_tool_actions_are_classed_by_their_kind():
    assert command_class(SearchLs(path="/app")) == "read"
    assert command_class(FileEdit(file_path="/a", old_string="x", new_string="y")) == "change"


def test_an_unanswered_last_reply_has_no_results():
    (first, last) = trajectory_facts(
        _messages(LS, "<search_output>\nx\n</search_output>", "<think>\nlong and cut")
    )
    assert first.answered and not last.answered
    assert [(c.kind, c.output) for c in last.calls] == [("parse_error", None)]  # the open <think>


def test_reasoning_in_a_block_the_template_opened_is_thinking_not_prose():
    """A -Thinking template opens `<think>` in the prompt: the reply holds a bare `</think>`."""
    (reply,) = trajectory_facts(
        _messages("Let me list it.\n</think>\n\n" + LS, "<search_output>\nx\n</search_output>")
    )
    assert reply.think_chars == len("Let me list it.")
    assert reply.other_chars == len(LS) and [c.kind for c in reply.calls] == ["search.ls"]


SOLVE = (
    'cd /app && wc -l < logs/app.log > count.txt && python3 -c "import json; '
    "json.dump({}, open('summary.json', 'w'))\""
)


def test_a_change_touches_the_files_it_names_but_not_where_it_cds():
    assert touched_paths(BashAction(cmd=SOLVE)) == {"logs/app.log", "count.txt", "summary.json"}
    assert touched_paths(FileWrite(file_path="/app/calc.py", content="json.dump(x)")) == {
        "/app/calc.py"
    }


@pytest.mark.parametrize(
    "action, looks",
    [
        (BashAction(cmd="cat /app/count.txt"), True),  # the same file, by its absolute path
        (BashAction(cmd="cd /app && diff <(wc -l < logs/app.log) count.txt"), True),
        (BashAction(cmd="python3 -m json.tool /app/summary.json"), True),
        (FileRead(file_path="/app/summary.json"), True),
        (BashAction(cmd="cd /app && python -m pytest -q"), True),  # runs the tests
        (BashAction(cmd="curl -s localhost:8080/health"), True),  # queries the service
        (BashAction(cmd="ls /app"), False),  # names no file of the work
        (BashAction(cmd="python3 -c \"print('all checks passed')\""), False),
        (BashAction(cmd="cat /app/other.txt"), False),
    ],
)
def test_a_check_must_look_at_the_work(action, looks):
    assert checks_work(action, touched_paths(BashAction(cmd=SOLVE))) is looks


def test_a_path_inside_a_touched_directory_is_the_work_too():
    venv = touched_paths(BashAction(cmd="python3 -m venv /app/venv && /app/venv/bin/pip install x"))
    assert checks_work(BashAction(cmd="/app/venv/bin/python -c 'import x'"), venv)
