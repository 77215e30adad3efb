"""Run a workspace notebook headless (papermill) into a run folder, and render it to HTML.

This is what `tbrl demo` and the batch-job recipe in docs/notebooks.md do: the executed notebook,
its `summary.json` and a self-contained HTML report (code hidden) land in one folder under
the workspace's `outputs/`, so a run explains itself. The notebook is the workspace's
(`notebooks/<name>.ipynb`); its kernel starts in the caller's folder, so a path passed as a
parameter means what it means in the caller's shell. While it runs, stderr shows each cell, what it prints
and its progress bars (`tbrl_lib.notebook_tools.progress`). When a cell fails, the executed
notebook and its HTML (with the error visible) are still written, and `NotebookFailed` says
which cell failed, how, and where both files are.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from tbrl_lib.run_folder import run_dir
from tbrl_lib.workspace import workspace_path


class NotebookFailed(RuntimeError):
    """A cell raised; the message names the cell, the error and where the outputs are."""


def execute_notebook(
    name: str,
    parameters: dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    html: bool = True,
) -> Path:
    """Execute `notebooks/<name>.ipynb`; return the run folder holding its outputs.

    Raises `NotebookFailed` (after writing the executed notebook and its HTML) when a
    cell raises."""
    import papermill  # the notebooks extra (and `tbrl --help` never loads it)
    from papermill.exceptions import PapermillExecutionError

    from tbrl_lib.notebook_tools import progress  # registers the engine; papermill is optional

    notebooks = workspace_path("notebooks")
    source = notebooks / f"{name}.ipynb"
    if not source.exists():
        choices = ", ".join(sorted(p.stem for p in notebooks.glob("*.ipynb")))
        raise FileNotFoundError(f"no notebook {source}; choose one of: {choices}")
    run = run_dir(out_dir or "", name)
    executed = run / f"{name}.ipynb"
    try:
        papermill.execute_notebook(
            str(source),
            str(executed),
            parameters={**(parameters or {}), "out_dir": str(run)},
            cwd=str(Path.cwd()),
            kernel_name="python3",
            engine_name=progress.ENGINE,
            progress_bar=False,
            stdout_file=sys.stderr,
            stderr_file=sys.stderr,
        )
    except PapermillExecutionError as exc:
        report = render_html(executed) if html else None
        raise NotebookFailed(_failure_message(name, exc, executed, report)) from exc
    if html:
        render_html(executed)
    return run


def _failure_message(name: str, exc: Any, executed: Path, report: Path | None) -> str:
    code = [c for c in json.loads(executed.read_text())["cells"] if c["cell_type"] == "code"]
    failed = [
        i
        for i, c in enumerate(code)
        if any(o.get("output_type") == "error" for o in c.get("outputs", []))
    ]
    which = f"code cell {failed[0] + 1} of {len(code)}" if failed else "a cell"
    first = (exc.source or "").strip().splitlines()[:1]
    where = f"; report: {report}" if report else ""
    return (
        f"notebook {name} failed in {which} ({first[0][:80] if first else ''!r}): "
        f"{exc.ename}: {exc.evalue}; executed notebook: {executed}{where}"
    )


def render_html(notebook: Path) -> Path:
    """Render an executed notebook to a self-contained HTML report without code cells,
    without the warnings third-party libraries printed (`drop_library_warnings`) and without
    live widgets (`drop_widgets`)."""
    import nbformat  # the notebooks extra, as papermill
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    )
    node = nbformat.read(notebook, as_version=4)
    drop_library_warnings(node)
    drop_widgets(node)
    body, _ = exporter.from_notebook_node(node)
    target = notebook.with_suffix(".html")
    target.write_text(body, encoding="utf-8")
    return target


LIBRARY_WARNING = re.compile(r"^\S*[/\\](?:site|dist)-packages[/\\]\S*:\d+: \w+: ")
"""The first line of a warning Python printed for a module of an installed package:
`<venv>/site-packages/trl/import_utils.py:105: UserWarning: ...`."""


def drop_library_warnings(notebook: Any) -> None:
    """Remove, in place, the warnings installed packages printed on a cell's stderr (each one's
    first line and the indented source lines under it): a shared report shows its results, not
    the machine's venv paths. tbrl's own warnings and everything else on stderr stay; so does
    the executed notebook itself (only the report is filtered)."""
    for cell in notebook.cells:
        kept, skipping = [], False  # a warning's source line may arrive in the next output
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                lines = []
                for line in output["text"].splitlines(keepends=True):
                    skipping = bool(LIBRARY_WARNING.match(line)) or (
                        skipping and line[:1] in (" ", "\t")
                    )
                    if not skipping:
                        lines.append(line)
                output["text"] = "".join(lines)
                if not lines:
                    continue
            kept.append(output)
        if "outputs" in cell:
            cell["outputs"] = kept


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widgets(notebook: Any) -> None:
    """Remove, in place, the widgets a live kernel showed (the training panel, the trajectory
    viewer) and their saved state: a static page cannot run them, nbconvert would load a
    widget manager from the internet for them, and what they show the report holds as
    printed lines, plots and static pages. A notebook saved from JupyterLab has them; one run
    by papermill shows none."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if WIDGET_VIEW not in o.get("data", {})]


def read_summary(run: Path) -> dict[str, Any]:
    return json.loads((Path(run) / "summary.json").read_text())
