"""`validate_tasks` in real containers: a good task passes, and each way a task can be
broken (the do-nothing agent passes, the reference solution fails, a flaky test, no
solution, a Dockerfile that does not build) gets a `fail` verdict naming the reason.
Plus the parts that need no Docker: config checks, input checks and the table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.evaluate.validate import (
    ValidationConfig,
    ValidationResult,
    Verdict,
    validate_tasks,
    validate_tasks_async,
    validation_table,
)
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.model import Task

DATA = Path(__file__).resolve().parents[2] / "data" / "tasks"

REAL_TESTS = """
from pathlib import Path


def test_file_exists():
    assert Path("/app/out.txt").exists()


def test_content():
    assert Path("/app/out.txt").read_text() == "hello\\n"
"""

FLAKY_TESTS = (
    REAL_TESTS
    + """

def test_counter():
    # Counts its own runs: passes on the first run of a container only.
    counter = Path("/app/.runs")
    runs = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(runs))
    assert runs == 1
"""
)

NOP_PASSES = """
from pathlib import Path


def test_app_dir():
    assert Path("/app").is_dir()


def test_content():
    assert Path("/app/out.txt").read_text() == "hello\\n"
"""


def toy(
    task_id: str,
    tests: str = REAL_TESTS,
    solution: str | None = "echo hello > /app/out.txt\n",
    weights: dict[str, float] | None = None,
    dockerfile: str = f"FROM {BASE_IMAGE}\nWORKDIR /app\n",
) -> Task:
    return Task.model_validate(
        {
            "id": task_id,
            "instruction": "Create /app/out.txt containing the line hello.",
            "difficulty": "easy",
            "category": "file-operations",
            "environment": {"dockerfile": dockerfile},
            "tests": {"pytest": tests, "weights": weights or {}},
            "solution": solution,
            "limits": {"agent_timeout_sec": 60, "test_timeout_sec": 60, "build_timeout_sec": 120},
        }
    )


BROKEN = {
    "tbrl-val-good": toy("tbrl-val-good"),
    "tbrl-val-nop-passes": toy("tbrl-val-nop-passes", tests=NOP_PASSES),
    "tbrl-val-bad-solution": toy("tbrl-val-bad-solution", solution="echo goodbye > /app/out.txt\n"),
    "tbrl-val-solve-crashes": toy(
        "tbrl-val-solve-crashes", solution="echo hello > /app/out.txt\nexit 3\n"
    ),
    "tbrl-val-flaky": toy(
        "tbrl-val-flaky",
        tests=FLAKY_TESTS,
        weights={"test_file_exists": 0.45, "test_content": 0.45, "test_counter": 0.1},
    ),
    "tbrl-val-no-solution": toy("tbrl-val-no-solution", solution=None),
    "tbrl-val-no-build": toy(
        "tbrl-val-no-build",
        dockerfile=f"FROM {BASE_IMAGE}\nRUN echo broken-on-purpose && false\n",
    ),
}


@pytest.fixture(scope="module")
def toy_results(docker_client, base_image):
    """One concurrent validation of every toy task; their images are removed afterwards."""
    tasks = list(BROKEN.values())
    results = validate_tasks(tasks, concurrency=4, progress=False)
    yield {r.task_id: r for r in results}
    for task in tasks:
        _untag(docker_client, task)


def _untag(docker_client, task: Task) -> None:
    """Remove the image tag a test task created (the layers stay while others use them)."""
    from docker.errors import APIError, ImageNotFound

    from tbrl_lib.sandbox.backends.docker.images import image_tag

    try:
        docker_client.images.remove(image_tag(task))
    except (ImageNotFound, APIError):
        pass  # never built (the broken Dockerfile), or still used by a running container


@pytest.mark.docker
@pytest.mark.slow
def test_good_task_passes(toy_results):
    r = toy_results["tbrl-val-good"]
    assert r.verdict is Verdict.passed, r.reasons
    assert r.nop_score == 0.0 and r.solution_scores == [1.0, 1.0, 1.0] and r.stable is True
    assert {"build", "nop", "solve", "tests", "total"} <= set(r.timings)


@pytest.mark.docker
@pytest.mark.slow
def test_results_keep_input_order(toy_results):
    assert list(toy_results) == list(BROKEN)


@pytest.mark.docker
@pytest.mark.slow
def test_nop_that_passes_fails_the_task(toy_results):
    r = toy_results["tbrl-val-nop-passes"]
    assert r.verdict is Verdict.failed
    assert r.nop_score == pytest.approx(0.5)
    assert r.passing_on_nop == ["test_app_dir"]
    assert any("untouched environment scores 0.50" in x and "test_app_dir" in x for x in r.reasons)
    assert r.solution_scores[0] == 1.0  # the solution part still ran and is reported


@pytest.mark.docker
@pytest.mark.slow
def test_solution_that_does_not_pass_fails(toy_results):
    r = toy_results["tbrl-val-bad-solution"]
    assert r.verdict is Verdict.failed and r.solution_score == pytest.approx(0.5)
    assert r.failing_after_solution == ["test_content"]
    assert any("reference solution scores 0.50" in x for x in r.reasons)
    crash = toy_results["tbrl-val-solve-crashes"]
    assert crash.verdict is Verdict.failed
    assert any("solve.sh exited 3" in x for x in crash.reasons)


@pytest.mark.docker
@pytest.mark.slow
def test_flaky_test_is_caught(toy_results):
    r = toy_results["tbrl-val-flaky"]
    assert r.verdict is Verdict.failed and r.stable is False
    assert r.nop_score == pytest.approx(0.1)
    assert r.solution_scores[0] == pytest.approx(1.0) and r.solution_scores[1] == pytest.approx(0.9)
    assert any(x.startswith("flaky") and "test_counter" in x for x in r.reasons)


@pytest.mark.docker
@pytest.mark.slow
def test_missing_solution_and_broken_build(toy_results):
    r = toy_results["tbrl-val-no-solution"]
    assert r.verdict is Verdict.failed and r.solution_scores == []
    assert any("no reference solution" in x for x in r.reasons)
    r = toy_results["tbrl-val-no-build"]
    assert r.verdict is Verdict.failed
    assert any("image build failed" in x for x in r.reasons) and r.nop_score is None


@pytest.mark.docker
@pytest.mark.slow
def test_cli_validates_bundled_tasks_and_sets_exit_code(tmp_path, docker_client, base_image):
    """`tbrl tasks validate` on two bundled tasks (pass) and a copy of one with its
    solution removed (fail): exit code 1 and every id in the table."""
    from tbrl_lib.cli import app

    for name in ["word-frequency", "git-first-commit"]:
        shutil.copytree(DATA / name, tmp_path / name)
    shutil.copytree(DATA / "word-frequency", tmp_path / "word-frequency-unsolved")
    (tmp_path / "word-frequency-unsolved" / "solution" / "solve.sh").write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\ncd /app\necho wrong > top_words.txt\n"
    )
    out = tmp_path / "results.json"
    result = CliRunner().invoke(
        app,
        ["tasks", "validate", str(tmp_path), "--concurrency", "3", "--json", str(out)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 1, result.output
    for name in ["word-frequency", "git-first-commit", "word-frequency-unsolved"]:
        assert name in result.output

    verdicts = {r["task_id"]: r["verdict"] for r in json.loads(out.read_text())}
    assert verdicts == {
        "git-first-commit": "pass",
        "word-frequency": "pass",
        "word-frequency-unsolved": "fail",
    }
    unsolved = load_tasks(tmp_path / "word-frequency-unsolved").tasks[0]
    _untag(docker_client, unsolved)  # the bundled tasks' images stay: they are the dataset's cache


def test_cli_rejects_unknown_only_ids():
    from tbrl_lib.cli import app

    result = CliRunner().invoke(app, ["tasks", "validate", str(DATA), "--only", "no-such-task"])
    assert result.exit_code == 2 and "no-such-task" in result.output


def test_input_checks_need_no_docker():
    import asyncio

    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(validate_tasks_async([toy("a")], concurrency=0))
    with pytest.raises(ValueError, match="duplicate task ids"):
        asyncio.run(validate_tasks_async([toy("a"), toy("a")]))
    for bad in [{"max_nop_score": 1.5}, {"repeats": 0}, {"solution_timeout_s": 0}]:
        with pytest.raises(ValueError):
            ValidationConfig(**bad)


def test_table_shows_scores_reasons_and_totals():
    ok = ValidationResult(
        "t-ok",
        "easy",
        "git",
        nop_score=0.0,
        solution_scores=[1.0, 1.0, 1.0],
        stable=True,
        timings={"build": 1.0, "tests": 2.5, "total": 9.0},
    )
    bad = ValidationResult(
        "t-bad", "hard", "git", nop_score=0.6, solution_scores=[1.0, 1.0, 1.0], stable=True
    )
    bad.fail("untouched environment scores 0.60 > 0.20")
    console = Console(width=200, record=True)
    console.print(validation_table([ok, bad]))
    text = console.export_text()
    assert "t-ok" in text and "t-bad" in text and "0.60" in text and "2.5" in text
    assert "untouched environment scores 0.60" in text and "1/2 pass" in text
    assert ok.ok and not bad.ok and bad.to_dict()["verdict"] == "fail"


@pytest.mark.docker
@pytest.mark.slow
def test_check_reports_third_party_tasks_including_those_that_do_not_load(tmp_path, base_image):
    """`tbrl tasks check` on the third-party Harbor fixtures (upper-case id, binary data, dated
    base tag), one copy without a solution (fine here) and one that does not load."""
    from tbrl_lib.cli import app

    fixtures = Path(__file__).resolve().parents[1] / "tasks" / "fixtures" / "third_party" / "harbor"
    for task_dir in fixtures.iterdir():
        shutil.copytree(task_dir, tmp_path / task_dir.name)
    shutil.copytree(fixtures / "py313-dated-logs", tmp_path / "py313-no-solution")
    shutil.rmtree(tmp_path / "py313-no-solution" / "solution")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "task.toml").write_text("this is = not [toml\n")
    out = tmp_path / "check.json"
    result = CliRunner().invoke(
        app, ["tasks", "check", str(tmp_path), "--json", str(out)], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 1, result.output  # the broken one
    report = json.loads(out.read_text())
    assert [Path(s["location"]).name for s in report["skipped"]] == ["broken"]
    by_id = {r["task_id"]: r for r in report["results"]}
    assert by_id["R_package_Summary-Stats"]["solution_scores"] == [1.0]
    assert (
        by_id["py313-dated-logs"]["nop_score"] == 0.0
        and by_id["py313-dated-logs"]["verdict"] == "pass"
    )
    assert "no solution" in result.output and "broken" in result.output


@pytest.mark.docker
@pytest.mark.slow
def test_check_runs_the_tb1_example_with_weight_variants_under_noop_and_oracle(
    tmp_path, base_image
):
    """The upstream TB1 hello-world (non-numeric weight, unprefixed keys) loads leniently,
    builds offline and scores 0 untouched, 1 solved: no infra error anywhere."""
    from tbrl_lib.cli import app

    tb1 = Path(__file__).resolve().parents[1] / "tasks" / "fixtures" / "third_party" / "tb1"
    out = tmp_path / "check.json"
    result = CliRunner().invoke(
        app, ["tasks", "check", str(tb1), "--json", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["skipped"] == []
    (hello,) = report["results"]
    assert hello["task_id"] == "hello-world" and hello["verdict"] == "pass", hello
    assert hello["nop_score"] == 0.0 and hello["solution_scores"] == [1.0]
    assert not any("infra" in reason for reason in hello["reasons"])
