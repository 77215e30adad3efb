"""A task dir's weights file, read the same way in both directory formats (Harbor:
`tests/test_weights.json`, Terminal-Bench 1: `test_weights.json`): strictly, a bad file is an
error naming the file and the problem; leniently, what can be read is read and each change
is reported, and what cannot is skipped with the reason."""

from __future__ import annotations

import pytest

from tbrl_lib.tasks import TaskFormatError, load_tasks
from tbrl_lib.tasks.harbor_format import read_harbor_dir, write_harbor_dir
from tbrl_lib.tasks.tb1_format import read_tb1_dir, write_tb1_dir

from .helpers import assert_names, make_task

FORMATS = {
    "harbor": (write_harbor_dir, read_harbor_dir, "tests/test_weights.json"),
    "tb1": (write_tb1_dir, read_tb1_dir, "test_weights.json"),
}
"""Format -> (writer, reader, where the weights file lies in the task dir)."""


def task_dir_with_weights(fmt: str, tmp_path, text: str):
    write, read, name = FORMATS[fmt]
    task_dir = write(make_task(), tmp_path)  # weights test_file_exists 0.3, test_content 0.7
    (task_dir / name).write_text(text)
    return task_dir, read, name


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize(
    "text, problem, lenient",
    [
        # a weight for a test that does not exist: dropped, then nothing usable is left
        ('{"test_nope": 1}', "do not exist", {}),
        ('{"test_content": -1}', "non-negative", {}),  # dropped the same way
        ('{"test_content": 1,}', "invalid JSON", None),  # nothing to read: skipped
        ("nope", "invalid JSON", None),
        ("[1, 2]", "expected a JSON object, got list", None),
        # as the published TB1 example writes it: a string weight, a key without `test_`
        (
            '{"test_content": "0.7", "file_exists": 0.3}',
            "'0.7', not a number",
            {"test_content": 0.7, "test_file_exists": 0.3},
        ),
    ],
)
def test_a_bad_weights_file_is_named_strictly_and_read_or_skipped_leniently(
    fmt, tmp_path, text, problem, lenient
):
    task_dir, read, name = task_dir_with_weights(fmt, tmp_path, text)
    with pytest.raises(TaskFormatError) as err:
        read(task_dir)
    assert_names(err, str(task_dir), name, problem)
    tasks, report = load_tasks(task_dir, "lenient", progress=False)
    if lenient is None:
        assert not tasks and problem in report.skipped[0].problem
    else:
        assert tasks[0].tests.weights == lenient
        assert report.warnings and all(w.field == name for w in report.warnings)
