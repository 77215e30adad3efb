"""Every tool in a real container, through the same parser the model's text goes through.
Each test names the system-prompt promise it checks."""

from __future__ import annotations

import pytest

from tbrl_lib.agent.config import ToolConfig
from tbrl_lib.agent.parser import parse_actions
from tbrl_lib.agent.toolbox import Toolbox

pytestmark = pytest.mark.docker


async def act(toolbox: Toolbox, text: str) -> list[str]:
    """Parse `text` and run its actions in order; the outputs the model would read."""
    parsed = parse_actions(text)
    assert not parsed.errors, parsed.errors[0].message
    return [(await toolbox.run(action)).output for action in parsed.actions]


def bash(cmd: str, **extra) -> str:
    fields = "".join(f"\n{k}: {v}" for k, v in extra.items())
    return f"<bash>\ncmd: |\n  {cmd}{fields}\n</bash>"


def test_bash_shell_persists_reports_exit_codes_times_out_and_backgrounds(sandbox_run):
    async def check(sb):
        tb = Toolbox(sb, ToolConfig(bash_default_timeout=5, bash_max_timeout=8))
        out = await act(
            tb, bash("cd /tmp && export GREETING=hi && X=1") + bash("pwd; echo $GREETING $X")
        )
        assert out[1].split() == ["/tmp", "hi", "1"]  # promise: cd, export, variables carry over
        (out,) = await act(tb, bash("echo oops >&2; false"))
        assert "oops" in out and "[exit code 1]" in out
        (out,) = await act(tb, bash("sleep 30", timeout_secs=1))
        assert "timed out after 1s" in out  # promise: stopped and told so
        (out,) = await act(tb, bash("echo alive; pwd"))
        assert out.split() == ["alive", "/tmp"]  # the shell survived the timeout
        (out,) = await act(tb, bash("sleep 1", timeout_secs=99))
        assert "above the maximum 8" in out  # promise: timeout_secs at most the maximum
        (out,) = await act(tb, bash("echo started-$GREETING; sleep 60", block="false"))
        assert "Started in the background: pid" in out
        log = out.split("output goes to ")[1].split()[0]
        (out,) = await act(tb, bash(f"sleep 0.5; cat {log}"))
        assert "started-hi" in out  # promise: pid and a log path to check later
        (out,) = await act(tb, bash("exit 3"))
        assert "[exit code 3]" in out
        (out,) = await act(tb, bash("echo [$X] $PWD"))
        assert out.split() == [
            "[]",
            "/tmp",
        ]  # promise: after `exit`, same directory, variables lost

    sandbox_run(check)


def test_output_is_capped_and_default_timeout_applies(sandbox_run):
    async def check(sb):
        tb = Toolbox(sb, ToolConfig(max_observation_chars=1000, bash_default_timeout=1))
        (out,) = await act(tb, bash("seq 1 20000"))
        assert len(out) < 1300 and "characters omitted" in out
        assert out.startswith("1\n2\n") and out.rstrip().endswith("20000")  # head and tail kept
        (out,) = await act(tb, bash("sleep 5"))
        assert "timed out after 1s" in out  # promise: timeout_secs defaults to the configured value

    sandbox_run(check)


def test_file_read_write_with_line_numbers_offsets_and_errors(sandbox_run):
    async def check(sb):
        tb = Toolbox(sb, ToolConfig(read_default_limit=3))
        body = "\n".join(f"line {n}" for n in range(1, 11)) + "\n"
        await sb.write_file("/app/ten.txt", body)
        (out,) = await act(
            tb, "<file>\naction: read\nfile_path: ten.txt\n</file>"
        )  # relative to cwd /app
        assert (
            out.splitlines()[0] == "     1\tline 1"
            and "showing lines 1-3 of 10; continue with offset: 4" in out
        )
        (out,) = await act(
            tb, "<file>\naction: read\nfile_path: /app/ten.txt\noffset: 9\nlimit: 5\n</file>"
        )
        assert out.splitlines() == ["     9\tline 9", "    10\tline 10"]
        await sb.write_file("/app/wide.txt", "x" * 3000 + "\n")
        (out,) = await act(tb, "<file>\naction: read\nfile_path: /app/wide.txt\n</file>")
        assert out == "     1\t" + "x" * 2000 + " [... 1,000 more characters]"  # long lines are cut
        (out,) = await act(tb, "<file>\naction: read\nfile_path: /app/missing.txt\n</file>")
        assert out == "[ERROR] File not found: /app/missing.txt"
        (out,) = await act(tb, "<file>\naction: read\nfile_path: /app\n</file>")
        assert "is a directory" in out
        await sb.run("head -c 100 /dev/urandom > /app/blob.bin; printf '\\0' >> /app/blob.bin")
        (out,) = await act(tb, "<file>\naction: read\nfile_path: /app/blob.bin\n</file>")
        assert "looks binary" in out
        await sb.run("printf '#!/bin/sh\\necho old\\n' > /app/run.sh && chmod 755 /app/run.sh")
        out = await act(
            tb,
            "<file>\naction: write\nfile_path: /app/run.sh\ncontent: |\n  #!/bin/sh\n  echo new\n</file>"
            "<file>\naction: write\nfile_path: /app/deep/er/x.txt\ncontent: hi\n</file>",
        )
        assert out[0].startswith("Replaced /app/run.sh") and out[1].startswith(
            "Created /app/deep/er/x.txt"
        )
        (out,) = await act(
            tb, "<file>\naction: write\nfile_path: /app/run.sh/inside.txt\ncontent: x\n</file>"
        )
        assert out.startswith(
            "[ERROR] cannot create the directory"
        )  # a model mistake, not an infra error
        res = await sb.run("/app/run.sh; stat -c %a /app/run.sh; cat /app/deep/er/x.txt")
        assert res.output.split() == ["new", "755", "hi"]  # mode kept, parents created

    sandbox_run(check)


def test_edit_misses_and_ambiguity_are_errors_and_multi_edit_is_atomic(sandbox_run):
    async def check(sb):
        tb = Toolbox(sb)
        original = "alpha = 1\nbeta = 2\nalpha = 1\n"
        await sb.write_file("/app/c.py", original)
        edit = '<file>\naction: edit\nfile_path: /app/c.py\nold_string: "{old}"\nnew_string: "{new}"{extra}\n</file>'
        (out,) = await act(tb, edit.format(old="gamma = 3", new="x", extra=""))
        assert "was not found" in out
        (out,) = await act(tb, edit.format(old="alpha = 1", new="alpha = 9", extra=""))
        assert "occurs 2 times" in out and "lines 1, 3" in out
        assert (await sb.read_file("/app/c.py")).decode() == original  # errors change nothing
        (out,) = await act(tb, edit.format(old="beta = 2", new="beta = 3", extra=""))
        assert "replaced 1 occurrence" in out and "beta = 3" in out
        (out,) = await act(
            tb, edit.format(old="alpha = 1", new="alpha = 0", extra="\nreplace_all: true")
        )
        assert "replaced 2 occurrence" in out
        before = (await sb.read_file("/app/c.py")).decode()
        multi = (
            "<file>\naction: multi_edit\nfile_path: /app/c.py\nedits:\n"
            '  - old_string: "beta = 3"\n    new_string: "beta = 4"\n'
            '  - old_string: "not there"\n    new_string: "x"\n</file>'
        )
        (out,) = await act(tb, multi)
        assert "edit 2 of 2" in out and "no edit was written" in out
        assert (await sb.read_file("/app/c.py")).decode() == before  # all or nothing
        (out,) = await act(
            tb, multi.replace("not there", "alpha = 0\\nbeta = 4").replace('"x"', '"done"')
        )
        assert (await sb.read_file("/app/c.py")).decode() == "done\nalpha = 0\n"

    sandbox_run(check)


def test_metadata_and_its_path_limit(sandbox_run):
    async def check(sb):
        tb = Toolbox(sb, ToolConfig(metadata_max_paths=2))
        (out,) = await act(
            tb, "<file>\naction: metadata\nfile_paths: [/etc/hostname, /nope]\n</file>"
        )
        assert "Type: regular file" in out and "Permissions:" in out and "/nope: not found" in out
        (out,) = await act(tb, "<file>\naction: metadata\nfile_paths: [/a, /b, /c]\n</file>")
        assert "at most 2 paths" in out

    sandbox_run(check)


def test_search_grep_glob_ls(sandbox_run):
    async def check(sb):
        tb = Toolbox(sb)
        await sb.run(
            "mkdir -p /app/src/pkg/deep /app/node_modules/x && cd /app && "
            "printf 'def load_config():\\n    pass\\n' > src/pkg/cfg.py && "
            "printf 'load_config = 1\\n' > src/notes.txt && echo x > top.py && "
            "echo 'def load_config' > node_modules/x/skip.py && touch src/pkg/deep/a.pyc"
        )
        (out,) = await act(
            tb,
            '<search>\naction: grep\npattern: "def \\\\w+_config\\\\("\npath: /app\ninclude: "*.py"\n</search>',
        )
        assert out.splitlines()[1:] == [
            "/app/src/pkg/cfg.py:1:def load_config():"
        ]  # regex, include, prune
        (out,) = await act(
            tb, '<search>\naction: grep\npattern: "(unclosed"\npath: /app\n</search>'
        )
        assert out.startswith("[ERROR] grep failed")
        (out,) = await act(tb, '<search>\naction: glob\npattern: "**/*.py"\npath: /app\n</search>')
        assert out.splitlines()[1:] == [
            "/app/src/pkg/cfg.py",
            "/app/top.py",
        ]  # ** matches zero dirs too
        (out,) = await act(tb, '<search>\naction: glob\npattern: "*.py"\npath: /app\n</search>')
        assert out.splitlines()[1:] == ["/app/top.py"]  # * stays in one level
        (out,) = await act(
            tb, '<search>\naction: ls\npath: /app/src/pkg/deep\nignore: ["*.pyc"]\n</search>'
        )
        assert "0 entries (1 hidden by ignore)" in out
        (out,) = await act(tb, "<search>\naction: ls\npath: /app/src\n</search>")
        assert [line.split()[-1] for line in out.splitlines()[1:]] == ["pkg/", "notes.txt"]
        few = Toolbox(sb, ToolConfig(search_max_results=1))
        (out,) = await act(
            few, "<search>\naction: grep\npattern: load_config\npath: /app/src\n</search>"
        )
        assert (
            out.startswith("1 matches (more exist; showing the first 1")
            and len(out.splitlines()) == 2
        )
        (out,) = await act(few, '<search>\naction: glob\npattern: "**"\npath: /app/src\n</search>')
        assert (
            "(showing the first 1;" in out and len(out.splitlines()) == 2
        )  # promise: at most N paths

    sandbox_run(check)
