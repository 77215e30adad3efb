"""Run a workspace notebook headless (papermill) into a run folder, and render it to HTML.

This is what `tbrl demo` and the batch-job recipe in the README do: the executed notebook,
its `summary.json` and a self-contained HTML report (code hidden) land in one folder under
`outputs/`, so a run explains itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def execute_notebook(name: str, parameters: dict[str, Any] | None = None,
                     out_dir: str | Path | None = None, html: bool = True) -> Path:
    """Execute `notebooks/<name>.ipynb`; return the run folder holding its outputs."""
    import papermill

    source = REPO_ROOT / "notebooks" / f"{name}.ipynb"
    if not source.exists():
        choices = ", ".join(sorted(p.stem for p in (REPO_ROOT / "notebooks").glob("*.ipynb")))
        raise FileNotFoundError(f"no notebook {source}; choose one of: {choices}")
    run = Path(out_dir) if out_dir else REPO_ROOT / "outputs" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    run.mkdir(parents=True, exist_ok=True)
    executed = run / f"{name}.ipynb"
    papermill.execute_notebook(
        str(source), str(executed),
        parameters={**(parameters or {}), "out_dir": str(run)},
        cwd=str(REPO_ROOT), kernel_name="python3", progress_bar=True,
    )
    if html:
        render_html(executed)
    return run


def render_html(notebook: Path) -> Path:
    """Render an executed notebook to a self-contained HTML report without code cells."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nbformat.read(notebook, as_version=4))
    target = notebook.with_suffix(".html")
    target.write_text(body, encoding="utf-8")
    return target


def read_summary(run: Path) -> dict[str, Any]:
    return json.loads((Path(run) / "summary.json").read_text())
