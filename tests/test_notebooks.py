"""Every notebook runs headless under papermill with its smallest parameters, and its
headline numbers (summary.json) are read back and checked. The executed reports of 03, 04
and 05 must lead with their result (headline and plot before any table) and keep each cell
within a screen (`notebook_tools.layout`); the commands their text names must exist.

The notebooks run with TBRL_UPSTREAM_DIR unset, so in a clone without data/upstream/ (CI's
fresh clone; `.ci/run` sets the variable for the rest of the suite) this proves that a bare
clone runs every notebook.

Each notebook starts in one of the three folders a researcher starts from (`STARTS`, in
rotation, so each folder sees complete runs): `notebooks/` (papermill as the workspace's usage
line has it, and JupyterLab's kernel), the repository root, and a folder outside the
workspace with TBRL_WORKSPACE set. Every run must leave its run folder in the workspace's
`outputs/` and nothing in the folder it started from; tests/browser runs all five from
`notebooks/` in JupyterLab, tests/test_workspace.py pins each default path."""

from __future__ import annotations

import json
import shutil

import pytest

from tbrl_lib import upstream, workspace
from tbrl_lib.notebook_tools.execute import render_html
from tbrl_lib.notebook_tools.layout import layout_problems
from tests.conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

# Smallest parameters per notebook; each notebook's owner keeps its line current.
SMOKE_PARAMETERS: dict[str, dict] = {
    "01_data_synthesis": {"n_tasks": 2, "llm_tasks": 0},
    "02_tool_design": {},
    "03_judge_comparison": {"attempts": 1},
    # the main job's preset, shrunk: demonstrations + SFT, one GRPO step, held-out evaluations;
    # two families and a bundled task, so the per-family panel and table are drawn
    "04_train": {
        "preset": "cpu-demo",
        "max_steps": 1,
        "settings": {
            "data.families": ["write_word", "count_matches"],
            "sft.demos": 8,
            "sft.epochs": 1,
            "data.family_tasks": 4,
            "grpo.gradient_accumulation_steps": 2,  # 8 rollouts: one task's group
            "heldout.instances": 2,
            "heldout.every": 1,
            "heldout.bundled": 1,
        },
    },
    "05_eval": {"policy": "oracle", "limit": 2, "concurrency": 2},
}


STARTS = {
    "01_data_synthesis": "root",
    "02_tool_design": "outside",
    "03_judge_comparison": "notebooks",
    "04_train": "outside",
    "05_eval": "notebooks",
}
"""Where each notebook's kernel starts: `notebooks/`, the repository root, or a folder outside
the workspace (with TBRL_WORKSPACE naming it)."""


def test_every_notebook_has_smoke_parameters_and_a_starting_folder():
    assert {nb.stem for nb in NOTEBOOKS} == set(SMOKE_PARAMETERS) == set(STARTS)
    assert set(STARTS.values()) == {"notebooks", "root", "outside"}


@pytest.fixture
def new_run_folder(request):
    """The one run folder the test's notebook leaves in the workspace's outputs/ (removed
    after the test)."""
    name = request.node.callspec.params["notebook"].stem
    before = set((REPO / "outputs").glob(f"{name}-*"))
    made: list = []

    def find():
        made.extend(set((REPO / "outputs").glob(f"{name}-*")) - before)
        assert len(made) == 1, f"{name} left run folders {made} in outputs/ (one expected)"
        return made[0]

    yield find
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_headless(notebook, tmp_path, monkeypatch, new_run_folder):
    import papermill

    monkeypatch.delenv(upstream.ENV_VAR, raising=False)  # the kernel inherits the environment
    monkeypatch.delenv(workspace.ENV_VAR, raising=False)
    start = {"notebooks": REPO / "notebooks", "root": REPO, "outside": tmp_path / "elsewhere"}[
        STARTS[notebook.stem]
    ]
    if STARTS[notebook.stem] == "outside":
        start.mkdir()
        monkeypatch.setenv(workspace.ENV_VAR, str(REPO))
    there = sorted(p.name for p in start.iterdir())
    papermill.execute_notebook(
        str(notebook),
        str(tmp_path / notebook.name),
        parameters=SMOKE_PARAMETERS[notebook.stem],
        cwd=str(start),
        kernel_name="python3",
        progress_bar=False,
    )
    out_dir = new_run_folder()
    assert sorted(p.name for p in start.iterdir()) == there, f"{notebook.stem} wrote in {start}"
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary, f"{notebook.name} recorded no headline numbers"
    if notebook.stem == "03_judge_comparison" and upstream.upstream_dir() is None:
        assert summary["suites"] == ["ours"] and summary["cases"] >= 12
    if notebook.stem == "03_judge_comparison":  # the rule judge on cases it was not tuned on
        held_out = summary["rule_leave_one_out"]
        assert held_out["pass_rate"] >= 0.75 and held_out["spearman"] >= 0.8, held_out
        assert "leave-one-out (cross-validated)" in (out_dir / "report.md").read_text()
        theatre = [r for r in summary["relative_labels"] if r["judge"] == "rule"]
        assert theatre and all(r["holds"] for r in theatre), summary["relative_labels"]
    if notebook.stem == "04_train":  # in a kernel: demonstrations, SFT, held-out table
        assert summary["warm_start"]["demos"] == 8
        assert [row["model"] for row in summary["heldout"]] == ["base", "warm start", "grpo"]
        families = {(r["family"], r["model"]) for r in summary["heldout_by_family"]}
        assert {f for f, _ in families} == {"write_word", "count_matches", "all"}
        assert [r["tasks"] for r in summary["heldout_bundled"]] == [1, 1, 1]
        assert (out_dir / "families.png").is_file()
        # what `make demo` streams: a line per GRPO step with its reward, held-out results
        lines = stream_lines(tmp_path / notebook.name)
        steps = [line for line in lines if line.startswith("grpo step ")]
        assert len(steps) == 1 and steps[0].startswith("grpo step 1/1") and " reward " in steps[0]
        held = [line.split(":")[0] for line in lines if line.startswith("held-out ")]
        assert held[:2] == ["held-out base", "held-out warm start"] and len(held) >= 3, held
        # TRL's vLLM-range warning: at most one note line, none of TRL's five warnings, and
        # the shared report shows no library warning (venv paths)
        assert sum(line.startswith("note: vLLM ") for line in lines) <= 1
        assert "TRL currently supports" not in (tmp_path / notebook.name).read_text()
        assert "site-packages" not in render_html(tmp_path / notebook.name).read_text()
    if notebook.stem in OFFLINE_TRAJECTORIES:
        assert_report_shows_trajectories(notebook.stem, tmp_path / notebook.name, out_dir)
    if notebook.stem in LEADS_WITH_RESULT:  # headline and plot before any table, each cell's
        # outputs within a screen
        assert layout_problems(tmp_path / notebook.name) == []


def stream_lines(executed) -> list[str]:
    """Every line the executed notebook's cells printed to stdout, in order."""
    cells = json.loads(executed.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    text = "".join("".join(o["text"]) for o in outputs if o.get("name") == "stdout")
    return text.splitlines()


LEADS_WITH_RESULT = ("03_judge_comparison", "04_train", "05_eval")
"""Notebooks whose executed report opens with its headline and plot, nothing over a screen."""


OFFLINE_TRAJECTORIES = ("02_tool_design", "05_eval")
"""Notebooks whose HTML report must show the agent's turns with no kernel and no network."""


def assert_report_shows_trajectories(name: str, executed, out_dir) -> None:
    """Render the executed notebook as `tbrl demo` does and read the report as a browser
    offline would: the turns are in the page itself (02) or in static pages it links (05)."""
    import re

    report = render_html(executed).read_text()
    if name == "02_tool_design":
        assert report.count("<details") >= 2 and "Turn 1:" in report, "no turns in the report"
        page = (out_dir / "oracle_trajectory.html").read_text()
        assert "<details" in page and "<script" not in page.lower()
    else:
        links = re.findall(r"href=[\"'](trajectories/[^\"']+\.html)[\"']", report)
        assert links, "the trial table links no trajectory page"
        for link in links:
            page = (out_dir / link).read_text()
            assert "<details" in page and "Turn 1:" in page and "<script" not in page.lower()


def test_commands_the_notebooks_name_exist():
    """Every `tbrl ...` command a notebook's text names is a command of the CLI, with the
    options it gives (a report must not send its reader to a command that does not exist)."""
    import re

    import typer

    from tbrl_lib.cli.app import app

    root = typer.main.get_command(app)
    named = set()
    for notebook in NOTEBOOKS:
        for cell in json.loads(notebook.read_text())["cells"]:
            named |= set(re.findall(r"`tbrl ([^`]+)`", "".join(cell["source"])))
    assert named, "no command found: the pattern no longer matches the notebooks"
    for text in sorted(named):
        command, words = root, text.split()
        while hasattr(command, "commands") and words and words[0] in command.commands:
            command = command.commands[words.pop(0)]
        assert not hasattr(command, "commands"), f"`tbrl {text}`: no such command"
        options = {o for p in command.params for o in p.opts}
        unknown = [w for w in words if w.startswith("-") and w.split("=")[0] not in options]
        assert not unknown, f"`tbrl {text}`: {command.name} has no option {unknown[0]}"


FACES_AT_MOST = 3


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_imports_from_a_few_faces(notebook):
    """A notebook reads as narrative over the library's public faces (`tbrl_lib.train`,
    `tbrl_lib.evaluate`, ...): at most three tbrl_lib modules, none reached into."""
    import ast

    modules = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source, flags = "".join(cell["source"]), ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        tree = compile(source, notebook.name, "exec", flags=flags)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tbrl_lib"):
                modules.add(node.module)
            elif isinstance(node, ast.Import):
                modules |= {a.name for a in node.names if a.name.startswith("tbrl_lib")}
    assert len(modules) <= FACES_AT_MOST, f"{notebook.name} imports from {sorted(modules)}"
