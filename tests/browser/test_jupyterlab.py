"""Each notebook the way a researcher explores it: opened in JupyterLab from `notebooks/` (the
kernel starts there), the parameters cell edited to the smallest run, Run > Run All Cells.
Then: no cell failed, the run folder and its summary.json are under the workspace's
`outputs/`, the figures and tables are drawn, 04's live panel counted its steps up while the
training cell ran (with the numbers of the printed lines), 02 and 05's trajectory viewer
steps through turns. The executed notebook is saved (File > Save Notebook As) into its run
folder and rendered as `tbrl demo` renders it; that report must fit a 1280 px page, load
every image, name no folder of this machine and (03-05) lead with its result. A screenshot
of each notebook after its run is kept in `outputs/browser-tests/` (docs/img/ keeps a copy of
each, 70-110 KB, for docs/notebooks.md)."""

from __future__ import annotations

import json
import re
import time

import pytest

from tbrl_lib.notebook_tools.execute import render_html
from tbrl_lib.notebook_tools.layout import layout_problems
from tests.browser.conftest import ARTIFACTS
from tests.browser.pages import NOTEBOOK, prompts, report_faults
from tests.conftest import REPO
from tests.test_notebooks import LEADS_WITH_RESULT

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.docker]

SMALLEST = {
    "01_data_synthesis": {"n_tasks": "2", "llm_tasks": "0"},
    "02_tool_design": {},
    "03_judge_comparison": {"attempts": "1"},
    # three steps, none skipped (the random tiny model's flat groups would end the run after
    # two): the panel is seen at two steps while the cell still runs
    "04_train": {
        "preset": '"cpu-smoke"',
        "max_steps": "3",
        "settings": '{"curriculum.filter_after_groups": 0}',
    },
    "05_eval": {"limit": "2", "concurrency": "2"},
}
"""Values typed into each parameters cell (the smallest run; 04: the plumbing preset)."""

FIGURES = {"01_data_synthesis": 1, "03_judge_comparison": 1, "04_train": 1, "05_eval": 2}
"""Plots each notebook draws at least."""

SHOWN = {
    "01_data_synthesis": "The mix",
    "02_tool_design": "The episode, turn by turn",
    "03_judge_comparison": "Result",
    "04_train": "Train",
    "05_eval": "Result",
}
"""The section each screenshot opens at."""

RUN_SECONDS = 480


def edited_parameters(name: str) -> str:
    """The parameters cell's source with the smallest values, comments kept."""
    cell = next(
        c
        for c in json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())["cells"]
        if "parameters" in c["metadata"].get("tags", [])
    )
    source = "".join(cell["source"])
    for key, value in SMALLEST[name].items():
        source, found = re.subn(rf"^({key}: \w+ = )[^#\n]+", rf"\g<1>{value}  ", source, flags=re.M)
        assert found == 1, f"{name}: no parameter {key} in the parameters cell"
    return source


def run_all(page, name: str) -> list[str]:
    """Run > Run All Cells; wait until every code cell has run. Returns the live panel's
    status texts seen meanwhile (04)."""
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    statuses: list[str] = []
    deadline = time.monotonic() + RUN_SECONDS
    while not all(re.fullmatch(r"\[\d+\]:", p) for p in prompts(page)):
        assert time.monotonic() < deadline, f"{name} still running after {RUN_SECONDS} s"
        status = page.locator(f"{NOTEBOOK} .tbrl-progress-status")
        if status.count():
            statuses.append(status.first.inner_text())
        time.sleep(0.5)
    return statuses


def save_as(page, path: str) -> dict:
    """File > Save Notebook As, into `path` (relative to the workspace); the saved notebook,
    once the server has written it whole."""
    page.get_by_role("menuitem", name="File", exact=True).click()
    page.get_by_role("menuitem", name="Save Notebook As…").click()
    field = page.locator(".jp-Dialog input")
    field.fill(path)
    field.press("Enter")
    deadline = time.monotonic() + 30
    while True:
        try:
            return json.loads((REPO / path).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            assert time.monotonic() < deadline, f"Save As did not write {path}"
            time.sleep(0.2)


@pytest.mark.parametrize("name", list(SMALLEST))
def test_notebook_runs_in_jupyterlab(lab, page, name):
    before = set((REPO / "outputs").glob(f"{name}-*"))
    page.goto(lab.url(f"notebooks/{name}.ipynb"))
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=90_000)
    page.keyboard.press("Control+b")  # the file browser closed: the notebook fills the page
    notebook = page.locator(NOTEBOOK)
    parameters = notebook.locator(".jp-CodeCell").first  # the tagged cell: the first code cell
    parameters.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(edited_parameters(name))
    page.keyboard.press("Escape")
    statuses = run_all(page, name)

    made = set((REPO / "outputs").glob(f"{name}-*")) - before
    assert len(made) == 1, f"{name} made run folders {sorted(made)} under outputs/"
    run = made.pop()
    assert json.loads((run / "summary.json").read_text()), f"{name}: empty summary.json"
    images = notebook.locator(".jp-OutputArea-output img").evaluate_all(
        "imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).length"
    )
    assert images >= FIGURES.get(name, 0), f"{name}: {images} plots drawn"
    assert notebook.locator(".jp-OutputArea-output table").count() >= 1, f"{name}: no table"
    if name == "04_train":
        assert_panel_counted_up(page, statuses)
    if name in ("02_tool_design", "05_eval"):
        assert_viewer_steps_through_turns(page)

    heading = notebook.locator(".jp-MarkdownOutput h2", has_text=re.compile(f"^{SHOWN[name]}"))
    heading.first.evaluate("h => h.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    saved = run / f"{name}.ipynb"
    cells = save_as(page, saved.relative_to(REPO).as_posix())["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, f"{name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    report = render_html(saved)
    faults = report_faults(page, report, REPO)
    if name in LEADS_WITH_RESULT:
        faults += layout_problems(saved)
    assert not faults, faults


def assert_panel_counted_up(page, statuses: list[str]) -> None:
    """Seen while the training cell ran: `step 1/3`, then `step 2/3`; at the end `step 3/3 ·
    finished`, and the panel's reward is the one the last printed line gives."""
    running = [s for s in statuses if "finished" not in s]
    steps = [int(m.group(1)) for s in running if (m := re.match(r"step (\d+)/", s))]
    assert len(set(steps)) >= 2 and steps == sorted(steps), f"the panel showed {statuses}"
    final = page.locator(".tbrl-progress-status").inner_text()
    assert final == "step 3/3 · finished", final
    reward = page.locator(".tbrl-progress-reward").inner_text()
    stdout = page.locator("[data-mime-type='application/vnd.jupyter.stdout']").all_inner_texts()
    steps = [line for text in stdout for line in text.splitlines() if "grpo step" in line]
    assert steps and steps[-1].startswith("grpo step 3/3"), steps
    assert f"reward {reward}" in steps[-1], (reward, steps[-1])


def assert_viewer_steps_through_turns(page) -> None:
    viewer = page.locator(".jp-OutputArea-output .widget-vbox", has_text="Turn 1").first
    viewer.get_by_role("button", name="next").click()
    page.locator(".jp-OutputArea-output .widget-vbox", has_text="Turn 2").first.wait_for()
