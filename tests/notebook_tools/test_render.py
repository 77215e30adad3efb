"""The shared HTML report leaves out the warnings installed libraries print (with the
machine's venv paths); tbrl's own warnings and the rest of stderr stay. A notebook saved from
JupyterLab loses its live widgets in the report; what they showed stays as printed text."""

from __future__ import annotations

import pytest

from tbrl_lib.notebook_tools.execute import drop_library_warnings, drop_widgets, render_html

LIBRARY = "/home/me/.venv/lib/python3.11/site-packages/trl/generation/__init__.py"


def stderr(text: str) -> dict:
    return {"output_type": "stream", "name": "stderr", "text": text}


def test_library_warnings_go_and_everything_else_stays():
    nbformat = pytest.importorskip("nbformat")
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        stderr(f"{LIBRARY}:22: UserWarning: TRL currently supports vLLM versions ...\n"),
        stderr("  if is_vllm_available():\n"),  # its source line, flushed apart
        stderr("sft step 1/8  loss 2.1\n"),
        stderr(f"{LIBRARY}:42: FutureWarning: old\n  x = 1\n/tmp/ipykernel_7/1.py:2: "),
        stderr("UserWarning: a task has no tests\n  warnings.warn(msg)\n"),
        {"output_type": "stream", "name": "stdout", "text": f"{LIBRARY}:1: UserWarning: kept\n"},
    ]
    notebook = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("# t")])
    drop_library_warnings(notebook)
    texts = [o["text"] for o in cell.outputs]
    assert texts == [
        "sft step 1/8  loss 2.1\n",
        "/tmp/ipykernel_7/1.py:2: ",
        "UserWarning: a task has no tests\n  warnings.warn(msg)\n",
        f"{LIBRARY}:1: UserWarning: kept\n",  # stdout is what the notebook chose to print
    ]


@pytest.mark.slow
def test_a_rendered_notebook_shows_no_library_warning(tmp_path):
    papermill = pytest.importorskip("papermill")
    nbformat = pytest.importorskip("nbformat")
    source = tmp_path / "tiny.ipynb"
    cells = [
        "import sysconfig, warnings\n"
        "library = sysconfig.get_paths()['purelib'] + '/somelib/mod.py'\n"
        "warnings.warn_explicit('a library complains', UserWarning, library, 3)\n"
        "print('result: 42')",
        "warnings.warn('tbrl says this once')",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(notebook, source)
    executed = tmp_path / "out" / "tiny.ipynb"
    executed.parent.mkdir()
    papermill.execute_notebook(str(source), str(executed), kernel_name="python3")
    assert "a library complains" in executed.read_text()  # the notebook itself keeps it
    report = render_html(executed).read_text()
    assert "result: 42" in report and "tbrl says this once" in report
    assert "a library complains" not in report and "site-packages" not in report


def test_live_widgets_and_their_state_stay_out_of_the_report():
    nbformat = pytest.importorskip("nbformat")
    cell = nbformat.v4.new_code_cell("with follow_training(run, 2): ...")
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            {"application/vnd.jupyter.widget-view+json": view, "text/plain": "VBox()"},
        ),
        {"output_type": "stream", "name": "stdout", "text": "grpo step 1/2  reward 0.00\n"},
    ]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    drop_widgets(notebook)
    assert [o["output_type"] for o in cell.outputs] == ["stream"]
    assert "widgets" not in notebook.metadata
