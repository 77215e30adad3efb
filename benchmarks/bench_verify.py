"""Verifier benchmark: seconds per verification, tbrl's isolated verifier next to a naive one.

    python benchmarks/bench_verify.py                 # 10 verifications each, one container
    python benchmarks/bench_verify.py --runs 20 --tests 12

Baseline (same run, same container): the naive way - copy the tests in and run `pytest`
from the container's PATH through `docker exec` (no protection at all against an agent that
planted a fake pytest, a conftest or a sitecustomize). Measured: `verify()` as training,
evaluation and validation call it - engine-started process, the runtime volume's own
interpreter and pytest, private root-only directory, JUnit over a pipe, cleanup. The first
verification on an engine also builds the runtime volume; it is reported apart, and so is
the first sandbox's pristine volume of the image (a build, or only the `.ready` check when
an earlier process built it). A Harbor-style script task (test.sh runs the image's pristine
`python3`) is measured too, and so is the part of every verification that restores the
image's programs and checks them afterwards (`sandbox.pristine_programs`), on its own,
inside the container, with the runtime's interpreter (no exec or engine noise in it).

The previous verifier copied a 55 MB runtime into every container: 3-9 s per verification
on this 2-core machine (issue #11); the goal for the runtime volume was a median <= 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from rich.table import Table

from tbrl_lib.console import console
from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.rewards.verifier import BASE_ENV, verify
from tbrl_lib.sandbox import IsolatedCommand, open_sandbox, pristine_programs
from tbrl_lib.sandbox.archive import tar_of
from tbrl_lib.sandbox.backends.docker import pristine_volume
from tbrl_lib.sandbox.runtime import interpreter_argv
from tbrl_lib.tasks.model import Environment, Task, Tests

NAIVE_DOCKERFILE = (
    f"FROM {BASE_IMAGE}\nRUN pip install --no-cache-dir pytest==8.4.1\nWORKDIR /app\n"
)
"""The task images carry no pytest of their own (`base_images`); the naive baseline runs one."""


def make_task(n_tests: int) -> Task:
    body = "\n".join(f"def test_{i}():\n    assert {i} == {i}\n" for i in range(n_tests))
    return Task(
        id="bench-verify",
        instruction="nothing to do",
        environment=Environment(dockerfile=NAIVE_DOCKERFILE),
        tests=Tests(pytest=body),
    )


def naive(sandbox, tests: str) -> None:
    container = sandbox.host.client.containers.get(sandbox.container_id)
    container.exec_run(["mkdir", "-p", "/tests"])
    container.put_archive("/tests", tar_of({"test_outputs.py": tests.encode()}))
    result = container.exec_run(
        [
            "bash",
            "-c",
            "cd /app && python3 -m pytest -q -p no:cacheprovider "
            "/tests/test_outputs.py --junitxml=/tmp/junit.xml",
        ]
    )
    if result.exit_code != 0:
        raise RuntimeError(f"naive pytest failed: {result.output.decode()[-500:]}")


def make_script_task() -> Task:
    """A Harbor-style task: test.sh runs `python3 check.py` (the image's pristine python3)."""
    check = "import pathlib\npathlib.Path('/logs/verifier/reward.txt').write_text('1')\n"
    return Task(
        id="bench-verify-script",
        instruction="nothing to do",
        environment=Environment(dockerfile=f"FROM {BASE_IMAGE}\nWORKDIR /app\n"),
        tests=Tests(script="#!/bin/bash\npython3 /tests/check.py\n", files={"check.py": check}),
    )


RESTORE_TIMING = """
import time
mirror = "/.tbrl-pristine"
manifest = load(mirror)
t0 = time.perf_counter()
baseline, restored, problems = restore(manifest, mirror, "bench")
t1 = time.perf_counter()
moved = changed(baseline)
print(len(manifest["entries"]), t1 - t0, time.perf_counter() - t1, restored, problems, moved)
"""


async def restore_seconds(sandbox) -> tuple[int, float, float]:
    """(entries, restore s, check s) of the image's programs, timed inside the container."""
    program = Path(pristine_programs.__file__).read_text() + RESTORE_TIMING
    result = await sandbox.exec_isolated(
        IsolatedCommand(
            [*interpreter_argv(sandbox.runtime_dir), "-I", "-S", "-B", "-c", program],
            env=BASE_ENV,
            timeout=60,
        )
    )
    entries, restore_s, check_s, *rest = result.stdout.decode().split(" ", 3)
    if rest and rest[0].strip() != "[] [] []":
        raise RuntimeError(f"an untouched container needed restoring: {result.stdout!r}")
    return int(entries), float(restore_s), float(check_s)


async def measure(runs: int, n_tests: int) -> dict[str, list[float]]:
    task = make_task(n_tests)
    times: dict[str, list[float]] = {
        "naive docker exec pytest (baseline)": [],
        "tbrl verify": [],
        "tbrl verify, first on this engine": [],
        "tbrl verify, script task running python3": [],
        "pristine volume: build or ready check, first sandbox": [],
        "restore of the image's programs, in the container": [],
        "check of the image's programs, in the container": [],
    }
    t0 = time.perf_counter()
    async with open_sandbox(task) as sandbox:
        times["pristine volume: build or ready check, first sandbox"] = list(
            pristine_volume.build_seconds.values()
        ) or [time.perf_counter() - t0]
        t0 = time.perf_counter()
        report = await verify(task, sandbox)
        times["tbrl verify, first on this engine"].append(time.perf_counter() - t0)
        if report.score != 1.0:
            raise RuntimeError(f"verify scored {report.score}: {report.error}")
        for _ in range(runs):
            t0 = time.perf_counter()
            await asyncio.to_thread(naive, sandbox, task.tests.pytest)
            times["naive docker exec pytest (baseline)"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            report = await verify(task, sandbox)
            times["tbrl verify"].append(time.perf_counter() - t0)
            assert report.score == 1.0, report
            _, restore_s, check_s = await restore_seconds(sandbox)
            times["restore of the image's programs, in the container"].append(restore_s)
            times["check of the image's programs, in the container"].append(check_s)
    script = make_script_task()
    async with open_sandbox(script) as sandbox:
        for _ in range(runs):
            t0 = time.perf_counter()
            report = await verify(script, sandbox)
            times["tbrl verify, script task running python3"].append(time.perf_counter() - t0)
            assert report.score == 1.0, report
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="verifications per method")
    parser.add_argument("--tests", type=int, default=12, help="test functions in the task")
    args = parser.parse_args()
    times = asyncio.run(measure(args.runs, args.tests))
    table = Table(
        title=f"seconds per verification ({args.tests} tests, {args.runs} runs, one container)"
    )
    for column in ("method", "n", "median", "min", "max"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for name, values in times.items():
        table.add_row(
            name,
            str(len(values)),
            f"{statistics.median(values):.3f}",
            f"{min(values):.3f}",
            f"{max(values):.3f}",
        )
    console().print(table)  # wide when redirected: no cut columns


if __name__ == "__main__":
    main()
