"""Progress of a headless notebook run, on stderr: which cell runs, and its progress bars.

Papermill's own bar counts cells, which says nothing during a ten-minute training cell.
`ENGINE` (registered with papermill on import) announces each code cell by its first line,
and echoes tqdm's notebook progress bars as text: a headless kernel still sends each bar's
widget updates, which this client reads (`label 12/36 [00:04<00:08, 2.9it/s]`) and prints
at most every `PROGRESS_EVERY_S` seconds per bar, plus the final one.

Left out: other widgets (only text that holds an `n/total` count is echoed).
"""

from __future__ import annotations

import html
import re
import sys
import time

from nbclient.client import NotebookClient
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines
from papermill.log import logger

ENGINE = "tbrl-progress"
PROGRESS_EVERY_S = 10.0
"""Shortest gap between two echoed lines of one progress bar."""
_COUNT = re.compile(r"\b(\d+)/(\d+)\b")


class ProgressClient(PapermillNotebookClient):
    """Papermill's notebook client, telling a headless run what each cell is doing."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._echoed: dict[str, float] = {}

    def execute_cell(self, cell, cell_index, *args, **kwargs):
        if cell.cell_type == "code" and cell.source.strip():
            code = [i for i, c in enumerate(self.nb.cells) if c.cell_type == "code"]
            first = cell.source.strip().splitlines()[0][:90]
            _say(f"[cell {code.index(cell_index) + 1}/{len(code)}] {first}")
        return super().execute_cell(cell, cell_index, *args, **kwargs)

    def handle_comm_msg(self, outs, msg, cell_index) -> None:
        NotebookClient.handle_comm_msg(self, outs, msg, cell_index)
        content = msg["content"]
        text = str(content.get("data", {}).get("state", {}).get("value", ""))
        count = _COUNT.search(text)
        if count is None:
            return
        comm_id, now = content["comm_id"], time.monotonic()
        finished = count.group(1) == count.group(2)
        last = self._echoed.setdefault(comm_id, now)  # a bar's first state is not news
        if (finished and last == float("inf")) or (not finished and now - last < PROGRESS_EVERY_S):
            return
        self._echoed[comm_id] = float("inf") if finished else now
        _say(f"    {self._bar_label(comm_id)}{html.unescape(text)}")

    def _bar_label(self, comm_id: str) -> str:
        """tqdm's widget is HBox(label, bar, counts): the label beside `comm_id`."""
        for state in self.widget_state.values():
            children = state.get("children") or []
            if f"IPY_MODEL_{comm_id}" in children:
                label = self.widget_state.get(children[0].removeprefix("IPY_MODEL_"), {})
                text = html.unescape(re.sub(r"<[^>]+>", " ", str(label.get("value", "")))).strip()
                return f"{text} " if text else ""
        return ""


class ProgressEngine(NBClientEngine):
    """Papermill's nbclient engine (same arguments) with `ProgressClient`."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man,
        kernel_name,
        log_output=False,
        stdout_file=None,
        stderr_file=None,
        start_timeout=60,
        execution_timeout=None,
        **kwargs,
    ):
        kwargs = {k: v for k, v in kwargs.items() if k not in ("input_path", "startup_timeout")}
        timeout = execution_timeout or kwargs.pop("timeout", None)
        client = ProgressClient(
            nb_man,
            **kwargs,
            timeout=timeout,
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=logger,
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
        )
        return client.execute()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


papermill_engines.register(ENGINE, ProgressEngine)
