"""Is a person watching this kernel? `frontend_renders_widgets()` tells a live Jupyter
frontend, which draws ipywidgets as they change, from papermill, a terminal or a script.

The test is the request that runs the current cell: a kernel's execute request says whether
it may ask for standard input (`allow_stdin`). JupyterLab, Notebook and VS Code send true (a
person can answer `input()`); nbclient, which papermill and `tbrl demo` run notebooks with,
always sends false (there is nobody to answer, and nobody to watch a widget), and a terminal
or a script has no kernel at all. Left out: frontends that execute without stdin yet render
widgets live (Voila executes before it shows a page). Standard library only (IPython when
present): the live training panel and the trajectory viewer ask it, neither loads pandas.
"""

from __future__ import annotations


def frontend_renders_widgets() -> bool:
    """True in a kernel whose current request came from an interactive frontend; False under
    papermill/nbclient, in a terminal or a script."""
    try:
        from IPython import get_ipython  # the notebooks extra
    except ImportError:
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return False
    request = kernel.get_parent("shell") or {}
    return bool(request.get("content", {}).get("allow_stdin", False))
