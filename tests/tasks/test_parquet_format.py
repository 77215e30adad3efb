"""Training Parquet: one self-contained row per task, a chat prompt TRL can read, lossless
read-back, and clear errors for files that are not tbrl task Parquet."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.tasks import TaskFormatError, load_tasks, write_tasks
from tbrl_lib.tasks.parquet_format import COLUMNS

from .helpers import assert_names, make_task


def test_rows_carry_prompt_id_and_the_whole_task(tmp_path):
    tasks = [make_task(id="a"), make_task(id="b", difficulty="hard")]
    path = tmp_path / "train.parquet"
    write_tasks(tasks, "parquet", path, progress=False, prompt_fn=initial_messages)
    table = pq.read_table(path)
    assert table.column_names == COLUMNS and table.num_rows == 2
    rows = table.to_pylist()
    assert rows[0]["prompt"] == initial_messages(tasks[0])  # the agent's own opening turns
    assert rows[1]["difficulty"] == "hard" and rows[1]["task_id"] == "b"
    back = load_tasks(path, progress=False).tasks
    assert [t.same_task(o) for t, o in zip(back, tasks)] == [True, True]
    assert back[1].provenance.location.endswith("train.parquet row 2")


def test_custom_prompt_fn(tmp_path):
    path = tmp_path / "t.parquet"
    write_tasks(
        [make_task()],
        "parquet",
        path,
        progress=False,
        prompt_fn=lambda task: [{"role": "user", "content": task.id}],
    )
    assert pq.read_table(path).column("prompt").to_pylist() == [
        [{"role": "user", "content": "demo-task"}]
    ]


def test_not_a_task_parquet_file(tmp_path):
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), path)
    with pytest.raises(TaskFormatError) as err:
        load_tasks(path, progress=False)
    assert_names(err, "other.parquet", "file", "not a readable tbrl task Parquet")


def test_corrupt_row_is_named(tmp_path):
    path = tmp_path / "t.parquet"
    write_tasks(
        [make_task(id="a"), make_task(id="b")],
        "parquet",
        path,
        progress=False,
        prompt_fn=initial_messages,
    )
    table = pq.read_table(path)
    broken = table.set_column(2, "task", pa.array([table.column("task")[0].as_py(), '{"id": "b"}']))
    pq.write_table(broken, path)
    tasks, report = load_tasks(path, "lenient", progress=False)
    assert [t.id for t in tasks] == ["a"]
    assert_names(report.skipped[0], "t.parquet row 2 (task_id b)", "task", "Field required")
