"""Harbor task dirs: layout written, generated verifier script (run in a real container),
leftover task.toml keys kept, and malformed dirs named precisely (the weights file's cases,
shared with TB1: `test_weights_files.py`)."""

from __future__ import annotations

import io
import tarfile
import uuid
from pathlib import Path

import pytest

from tbrl_lib.docker.base_images import RUNTIME_SOURCE
from tbrl_lib.tasks import TaskFormatError, load_tasks
from tbrl_lib.tasks.harbor_format import read_harbor_dir, write_harbor_dir
from tbrl_lib.tasks.standard_files import harbor_test_sh

from .helpers import assert_names, make_task


@pytest.fixture
def task_dir(tmp_path) -> Path:
    return write_harbor_dir(make_task(), tmp_path)


def test_layout_matches_interfaces(task_dir):
    files = sorted(p.relative_to(task_dir).as_posix() for p in task_dir.rglob("*") if p.is_file())
    assert files == [
        "environment/Dockerfile",
        "environment/data/in.txt",
        "instruction.md",
        "solution/solve.sh",
        "task.toml",
        "tests/expected.txt",
        "tests/test.sh",
        "tests/test_outputs.py",
        "tests/test_weights.json",
    ]
    assert (task_dir / "instruction.md").read_text() == make_task().instruction
    assert (task_dir / "tests/test.sh").stat().st_mode & 0o111
    toml = (task_dir / "task.toml").read_text()
    assert 'difficulty = "easy"' in toml and "[verifier]" in toml and "memory_mb = 2048" in toml


def test_generated_script_reads_back_as_no_script(task_dir):
    assert (task_dir / "tests/test.sh").read_text() == harbor_test_sh()
    assert read_harbor_dir(task_dir).tests.script is None


def test_custom_script_is_kept(tmp_path):
    task = make_task(
        tests={
            "pytest": "def test_a():\n    pass\n",
            "script": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
        }
    )
    back = read_harbor_dir(write_harbor_dir(task, tmp_path))
    assert back.tests.script == task.tests.script


def test_unknown_task_toml_keys_are_kept_and_written_back(task_dir, tmp_path):
    toml = task_dir / "task.toml"
    text = toml.read_text().replace("[verifier]\n", '[verifier]\nuser = "root"\n')
    toml.write_text(text + '\n[task]\nname = "org/demo"\n\n[solution]\nenv = { A = "1" }\n')
    task = read_harbor_dir(task_dir)
    assert task.metadata["harbor"] == {
        "verifier": {"user": "root"},
        "task": {"name": "org/demo"},
        "solution": {"env": {"A": "1"}},
    }
    again = read_harbor_dir(write_harbor_dir(task, tmp_path / "again"))
    assert again.same_task(task)


@pytest.mark.parametrize(
    "mutate, field, problem",
    [
        (
            lambda d: (d / "task.toml").write_text("[metadata\ndifficulty = 'easy'"),
            "task.toml",
            "invalid TOML",
        ),
        (lambda d: (d / "instruction.md").unlink(), "instruction.md", "missing"),
        (
            lambda d: (d / "instruction.md").write_text("  \n"),
            "instruction.md",
            "instruction is empty",
        ),
        (
            lambda d: (d / "environment/Dockerfile").write_text("RUN echo hi\n"),
            "environment/Dockerfile",
            "no FROM",
        ),
        (lambda d: (d / "environment/Dockerfile").unlink(), "environment/Dockerfile", "missing"),
        (
            lambda d: (d / "tests/expected.txt").write_bytes(b"\xff\xfe binary"),
            "tests/expected.txt",
            "not UTF-8",
        ),
        (
            lambda d: (d / "task.toml").write_text(
                (d / "task.toml").read_text().replace('"easy"', '"trivial"')
            ),
            "metadata.difficulty",
            "Input should be",
        ),
        (
            lambda d: (d / "solution/notes.txt").write_text("x"),
            "solution/notes.txt",
            "not supported",
        ),
        (
            lambda d: (d / "task.toml").write_text(
                (d / "task.toml").read_text() + "\n[metadata.tbrl]\ncolour = 1\n"
            ),
            "metadata.tbrl",
            "unknown keys ['colour']",
        ),
    ],
)
def test_malformed_dir_error_names_file_field_and_problem(task_dir, mutate, field, problem):
    mutate(task_dir)
    with pytest.raises(TaskFormatError) as err:
        read_harbor_dir(task_dir)
    assert_names(err, str(task_dir), field, problem)


def test_bad_directory_name_is_an_id_error(tmp_path):
    task_dir = write_harbor_dir(make_task(), tmp_path)
    bad = task_dir.rename(tmp_path / "Bad Name")
    with pytest.raises(TaskFormatError) as err:
        read_harbor_dir(bad)
    assert_names(err, "Bad Name", "directory name", "contains ' ' (whitespace")


def test_metadata_that_toml_cannot_hold_is_refused(tmp_path):
    with pytest.raises(TaskFormatError) as err:
        write_harbor_dir(make_task(metadata={"note": None}), tmp_path)
    assert_names(err, "demo-task", "metadata", "TOML")


def test_lenient_collection_reports_each_bad_dir(tmp_path):
    for name in ("good-a", "good-b", "broken"):
        write_harbor_dir(make_task(id=name), tmp_path)
    (tmp_path / "broken/instruction.md").write_text("")
    (tmp_path / "notes").mkdir()
    with pytest.raises(TaskFormatError):
        load_tasks(tmp_path, "strict", progress=False)
    tasks, report = load_tasks(tmp_path, "lenient", progress=False)
    assert [t.id for t in tasks] == ["good-a", "good-b"]
    assert sorted(Path(e.location).name for e in report.skipped) == ["broken", "notes"]
    assert "skipped 2" in report.summary()


@pytest.mark.docker
@pytest.mark.parametrize("image", ["with-pytest", pytest.param("without", marks=pytest.mark.slow)])
def test_generated_test_sh_writes_weighted_reward_in_a_container(
    docker_client, base_image, tmp_path, image
):
    """The standard script, run against a half-solved task: only test_file_exists (weight
    0.3) passes, and a weighted test that errors counts as failed. In an image with pytest
    (offline), and in the python family's, which has none: the script pins one with pip
    (over the network, as a Harbor runner's verifier has it)."""
    with_pytest = image == "with-pytest"
    pytest_source = (
        "import os\n\n"
        "def test_file_exists():\n    assert os.path.exists('/app/out.txt')\n\n"
        "def test_content():\n    assert open('/app/out.txt').read() == 'hello\\n'\n"
    )
    task = make_task(
        tests={"pytest": pytest_source, "weights": {"test_file_exists": 0.3, "test_content": 0.7}}
    )
    task_dir = write_harbor_dir(task, tmp_path)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.add(task_dir / "tests", arcname="tests")
    container = docker_client.containers.run(
        RUNTIME_SOURCE if with_pytest else base_image,  # the root filesystem keeps pytest
        ["sleep", "120"],
        detach=True,
        network_disabled=with_pytest,
        labels={"tbrl.test": "tasks-harbor-test-sh", "tbrl.run": uuid.uuid4().hex},
    )
    try:
        assert container.put_archive("/", archive.getvalue())
        container.exec_run(["bash", "-c", "mkdir -p /app && printf 'wrong\\n' > /app/out.txt"])
        _, output = container.exec_run(["bash", "/tests/test.sh"])
        _, reward = container.exec_run(["cat", "/logs/verifier/reward.txt"])
        assert float(reward.decode()) == pytest.approx(0.3), output.decode()[-2000:]
        container.exec_run(["bash", "-c", "printf 'hello\\n' > /app/out.txt"])
        container.exec_run(["bash", "/tests/test.sh"])
        _, reward = container.exec_run(["cat", "/logs/verifier/reward.txt"])
        assert float(reward.decode()) == pytest.approx(1.0)
    finally:
        container.remove(force=True)
