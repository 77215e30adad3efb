"""Run a workspace notebook headless (papermill) into a run folder, and render it to HTML.

This is what `tbrl demo` and the batch-job recipe in docs/notebooks.md do: the executed notebook,
its `summary.json` and a self-contained HTML report (code hidden) land in one folder under
`outputs/`, so a run explains itself. While it runs, stderr shows each cell, what it prints
and its progress bars (`tbrl_lib.notebook_tools.progress`). When a cell fails, the executed
notebook and its HTML (with the error visible) are still written, and `NotebookFailed` says
which cell failed, how, and where both files are.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tbrl_lib import REPO_ROOT


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

    source = REPO_ROOT / "notebooks" / f"{name}.ipynb"
    if not source.exists():
        choices = ", ".join(sorted(p.stem for p in (REPO_ROOT / "notebooks").glob("*.ipynb")))
        raise FileNotFoundError(f"no notebook {source}; choose one of: {choices}")
    run = (
        Path(out_dir)
        if out_dir
        else REPO_ROOT / "outputs" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    run.mkdir(parents=True, exist_ok=True)
    executed = run / f"{name}.ipynb"
    try:
        papermill.execute_notebook(
            str(source),
            str(executed),
            parameters={**(parameters or {}), "out_dir": str(run)},
            cwd=str(REPO_ROOT),
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
    """Render an executed notebook to a self-contained HTML report without code cells."""
    import nbformat  # the notebooks extra, as papermill
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    )
    body, _ = exporter.from_notebook_node(nbformat.read(notebook, as_version=4))
    target = notebook.with_suffix(".html")
    target.write_text(body, encoding="utf-8")
    return target


def read_summary(run: Path) -> dict[str, Any]:
    return json.loads((Path(run) / "summary.json").read_text())
