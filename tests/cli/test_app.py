"""The `tbrl` command: every group mounted, mistakes end in one line (what, where, the fix)
with a non-zero exit and no traceback unless --debug, commands that need Docker refuse
before running when no engine answers, and `tbrl demo` on a failing notebook still writes
its report."""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

from tbrl_lib import __version__
from tbrl_lib.cli import app, main
from tbrl_lib.console import FILE_WIDTH, console

runner = CliRunner()


def test_help_lists_every_group():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for group in ("images", "docker", "tasks", "judge", "eval", "doctor", "setup", "demo"):
        assert group in result.output


def test_demo_rejects_a_parameter_without_equals():
    result = runner.invoke(app, ["demo", "-p", "preset"])
    assert result.exit_code != 0
    assert "KEY=VALUE" in result.output


def test_demo_names_the_notebooks_when_one_is_unknown(tbrl):
    result = tbrl("demo", "--notebook", "nope")
    assert result.code == 1 and "04_train" in result.err


def one_line_error(result) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    assert "Traceback" not in result.err
    return lines[0]


def test_version(tbrl):
    result = tbrl("--version")
    assert result.code == 0 and result.out.strip() == f"tbrl {__version__}"


def test_bare_tbrl_prints_help(tbrl):
    result = tbrl()
    assert result.code != 0 and "Usage" in result.out + result.err and "Traceback" not in result.err


@pytest.mark.parametrize(
    "args, words",
    [
        (["eval", "show", "/no/such/run"], ["/no/such/run", "tbrl eval run"]),
        (["tasks", "stats", "/no/such/tasks"], ["/no/such/tasks"]),
        (["judge", "score", "/no/such/messages.json"], ["/no/such/messages.json"]),
        (["judge", "eval", "--judges", "gpt5", "--out", "/tmp/never"], ["gpt5", "rule"]),
    ],
)
def test_mistakes_end_in_one_line(tbrl, args, words):
    result = tbrl(*args)
    assert result.code == 1
    line = one_line_error(result)
    assert all(w in line for w in words), line


def test_usage_errors_are_one_line_with_exit_2(tbrl):
    result = tbrl("eval", "run", "--bogus")
    assert result.code == 2 and "--bogus" in one_line_error(result)
    assert "tbrl eval run --help" in result.err


def test_debug_shows_the_traceback():
    with pytest.raises(FileNotFoundError, match="no results at"):
        main(["--debug", "eval", "show", "/no/such/run"])


@pytest.fixture
def no_engine(monkeypatch, tmp_path):
    """DOCKER_HOST pointing at a socket nobody listens on: as if the engine were down."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "run", "--tasks", "data/tasks", "--policy", "oracle"],
        ["tasks", "validate", "data/tasks"],
    ],
)
def test_commands_that_need_docker_refuse_before_running(no_engine, tbrl, tmp_path, args):
    out = tmp_path / "out"
    result = tbrl(*args, "--out" if args[0] != "tasks" else "--json", out)
    assert result.code == 1
    line = one_line_error(result)
    assert "needs a Docker engine" in line and "DOCKER_HOST" in line
    assert not out.exists()  # refused before anything ran


def test_training_without_an_engine_is_refused_by_its_preflight(no_engine, tbrl, tmp_path):
    """The run's sandbox backend answers training's preflight (`SandboxBackend.preflight`):
    the refusal lists the engine with the preset's other problems, exit 2 as every refusal."""
    out = tmp_path / "out"
    result = tbrl("train", "run", "--preset", "cpu-smoke", "--out", out)
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.startswith("preset cpu-smoke cannot run here:")
    assert "needs a Docker engine" in result.err and "DOCKER_HOST" in result.err
    assert not out.exists()


def test_docker_reap_without_an_engine_says_how_to_start_one(no_engine, tbrl):
    line = one_line_error(tbrl("docker", "reap"))
    assert "tbrl docker reap needs a Docker engine" in line and "DOCKER_HOST" in line


@pytest.mark.parametrize("command", [["eval", "run", "--tasks", "data/tasks"], ["agent", "run"]])
def test_an_api_policy_without_its_key_is_refused_before_anything_runs(
    monkeypatch, tbrl, tmp_path, command
):
    if command[0] == "agent":  # agent run asks the engine first: give it one that answers
        from tbrl_lib.sandbox.backends.docker.backend import DockerBackend

        monkeypatch.setattr(DockerBackend, "check", lambda self, purpose: "")
        command = [*command, "data/tasks"]
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    out = tmp_path / "out"
    result = tbrl(*command, "--policy", "anthropic:claude-sonnet-4-5", "--out", out)
    assert result.code == 1
    line = one_line_error(result)
    assert "anthropic:claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY" in line
    assert not out.exists()


def test_an_unknown_eval_setting_is_named_with_the_known_ones(tbrl):
    result = tbrl("eval", "run", "--tasks", "data/tasks", "--set", "episode.max_turnz=3")
    assert result.code == 2
    line = one_line_error(result)
    assert "unknown setting 'episode.max_turnz'" in line and "max_turns" in line
    assert "pydantic" not in line and "extra_forbidden" not in line


def test_an_engine_outage_past_the_wait_ends_in_one_line_saying_how_to_resume(
    monkeypatch, tbrl, tmp_path
):
    """The engine answers at the start, then stops answering mid-run and stays down past
    the wait: `tbrl eval run` stops with exit 1 and one line (no traceback)."""
    from tbrl_lib.aio import run_sync
    from tbrl_lib.cli import evaluate as eval_command
    from tbrl_lib.docker import engine
    from tbrl_lib.evaluate import harness
    from tbrl_lib.sandbox.backends.docker.backend import DockerBackend

    monkeypatch.setattr(DockerBackend, "check", lambda self, purpose: "")
    monkeypatch.setattr(engine, "ping", lambda *a: None)  # down from now on

    def run_eval(tasks, config, out_dir, **kwargs):
        runner = harness.TrialRunner(None, None, config.rollout_config(), out_dir, 0.2)
        run_sync(runner._wait_for_engine("sandbox: daemon_unreachable: refused"))

    monkeypatch.setattr(eval_command, "run_eval", run_eval)
    result = tbrl("eval", "run", "--tasks", "data/tasks", "--policy", "noop", "--out", tmp_path)
    assert result.code == 1
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("error: the Docker engine stopped answering") and "Traceback" not in (
        result.err
    )
    assert "rerun the same command to resume" in line


def test_train_presets_has_a_header_row_and_aligned_columns(tbrl):
    lines = tbrl("train", "presets").out.splitlines()
    assert lines[0].split()[:3] == ["preset", "model", "hardware"]
    assert any(line.startswith("cpu-smoke") for line in lines[1:])
    column = lines[0].index("model")  # the longest name (an -async preset) still fits
    assert all(line[column - 1] == " " and line[column] != " " for line in lines[1:])
    # a server on the training node counts: 8xh100-async trains on 6 GPUs, serves on 2
    assert "1x8 GPU" in next(line for line in lines if line.startswith("8xh100-async"))


def test_console_is_wide_when_not_a_terminal():
    assert console(file=io.StringIO()).width == FILE_WIDTH
    assert console(file=io.StringIO(), force_terminal=True, width=90).width == 90


def test_tables_print_through_the_wide_console():
    """A bare `rich.Console()` is 80 columns when redirected: the library and the benchmarks
    print through `tbrl_lib.console.console()` (or give an explicit width)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bare = [
        f"{path.relative_to(root)}: {line.strip()}"
        for folder in ("tbrl_lib", "benchmarks")
        for path in sorted((root / folder).rglob("*.py"))
        if path.name != "console.py"
        for line in path.read_text().splitlines()
        if re.search(r"\bConsole\((?![^)]*width)", line)
    ]
    assert not bare, bare


@pytest.mark.slow
def test_demo_on_a_failing_notebook_says_which_cell_and_still_writes_the_report(tbrl, tmp_path):
    run = tmp_path / "run"
    result = tbrl("demo", "--notebook", "03_judge_comparison", "-p", "attempts=0", "--out", run)
    assert result.code == 1
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("error: notebook 03_judge_comparison failed in code cell ")
    assert "('dirs = suite_dirs(suites)')" in line  # the cell, by its first line
    assert "ValueError: attempts must be >= 1, got 0" in line
    html = run / "03_judge_comparison.html"
    assert str(html) in line and str(run / "03_judge_comparison.ipynb") in line
    assert "attempts must be &gt;= 1, got 0" in html.read_text()  # the error, visible offline
    assert "[cell 1/" in result.err  # progress: each cell announced


def test_demo_prints_each_summary_value_on_one_short_line():
    """`tbrl demo`'s closing lines: no raw dumps of the summary's tables (summary.json has them)."""
    from tbrl_lib.cli.workspace import _short

    assert _short(0.46645831068356836) == "0.4665"
    assert _short({"peak_rss_gib": 1.12, "plan_gib": 0.96}) == "peak_rss_gib 1.12, plan_gib 0.96"
    assert _short([{"task_id": "t"}] * 5) == "5 entries (summary.json)"
    assert _short({"checkpoint": "/x", "nested": {"a": 1}}) == "2 entries (summary.json)"
    assert _short(None) == "None" and _short("cpu-demo") == "cpu-demo"
