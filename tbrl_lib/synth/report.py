"""Tables and plots for looking at a generated task set (used by 01_data_synthesis).

`tasks_frame` gives one row per task; `plot_mix` draws the category x difficulty mix;
`export_all` writes the set in every format `write_tasks` speaks (the parquet rows carry
the agent's first prompt: the caller passes how it is rendered, e.g.
`tbrl_lib.agent.prompts.initial_messages`, since synthesis sits below the agent). Left out:
anything that runs containers (validation at scale: `tbrl_lib.evaluate.batch_validate`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tbrl_lib.tasks import FORMATS, write_tasks
from tbrl_lib.tasks.model import Difficulty, Task
from tbrl_lib.tasks.parquet_format import PromptFn


def tasks_frame(tasks: list[Task]) -> pd.DataFrame:
    rows = []
    for t in tasks:
        synth = t.metadata.get("synth", {})
        rows.append(
            {
                "id": t.id,
                "family": synth.get("family", "llm"),
                "category": t.category,
                "difficulty": t.difficulty.value,
                "tests": len(t.tests.test_names()),
                "files": len(t.environment.files),
                "data_kb": round(sum(map(len, t.environment.files.values())) / 1024, 1),
                "instruction_words": len(t.instruction.split()),
                "title": t.title,
            }
        )
    return pd.DataFrame(rows)


def plot_mix(tasks: list[Task], ax=None):
    """Stacked bars: tasks per category, coloured by difficulty."""
    import matplotlib.pyplot as plt  # the notebooks extra: imported where a plot is drawn

    frame = tasks_frame(tasks)
    order = [d.value for d in Difficulty if d.value in set(frame["difficulty"])]
    table = pd.crosstab(frame["category"], frame["difficulty"])[order]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    table.plot.barh(stacked=True, ax=ax, colormap="viridis")
    ax.set_xlabel("tasks")
    ax.set_ylabel("")
    ax.set_title(f"{len(tasks)} tasks by category and difficulty")
    ax.legend(title="difficulty", loc="lower right")
    return ax


def export_all(tasks: list[Task], out_dir: str | Path, prompt_fn: PromptFn) -> dict[str, Path]:
    """Write `tasks` in every format (Harbor and TB1 dirs, CSV, Parquet with its prompts by
    `prompt_fn`), each at its export name under `out_dir`; returns format -> path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, fmt in FORMATS.items():
        write_tasks(tasks, name, out / fmt.export_name, progress=False, prompt_fn=prompt_fn)
        written[name] = out / fmt.export_name
    return written
