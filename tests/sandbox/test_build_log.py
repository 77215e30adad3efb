"""Reading the engine's build stream: the failing step, its command and the error lines it
printed, and whose fault that is. The chunks are the classic builder's, as recorded from
Docker 20.10 (stderr in ANSI colour, lines split across chunks)."""

from __future__ import annotations

from tbrl_lib.docker.build_log import BuildLog

RED, RESET = "\x1b[91m", "\x1b[0m"


def feed(*chunks: dict) -> BuildLog:
    log = BuildLog()
    for chunk in chunks:
        log.feed(chunk)
    return log


def step(number: str, instruction: str) -> list[dict]:
    return [{"stream": f"Step {number} : {instruction}"}, {"stream": "\n"}]


def failed_run(command: str, code: int) -> dict:
    message = f"The command '/bin/sh -c {command}' returned a non-zero code: {code}"
    return {"errorDetail": {"code": code, "message": message}, "error": message}


PIP = "pip3 install --no-cache-dir --break-system-packages pytest==8.4.1"
CANNOT_UNINSTALL = [
    *step("1/3", "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624"),
    {"stream": " ---> 51a1c001f148\n"},
    *step("2/3", "RUN apt-get update && apt-get install -y python3-pip"),
    {"stream": " ---> Running in 4d97780cc48e\n"},
    {"stream": "Reading package lists..."},
    {"stream": "\n"},
    {"stream": "python3-pip is already the newest version (25.1.1+dfsg-1).\n"},
    {"stream": "Removing intermediate container 4d97780cc48e\n"},
    {"stream": " ---> 45c26981408a\n"},
    *step("3/3", f"RUN {PIP}"),
    {"stream": " ---> Running in 9b5a8632420d\n"},
    {"stream": "Collecting pytest==8.4.1\n"},
    {"stream": "  Downloading pytest-8.4.1-py3-none-any.whl.metadata (7.7 kB)\n"},
    {"stream": "Installing collected packages: pygments, pytest\n"},
    {"stream": "  Attempting uninstall: pytest\n"},
    {"stream": f"{RED}error: uninstall-no-record-file\n\n× Cannot uninstall pytest 8.3.5\n"},
    {"stream": "╰─> The package's contents are unknown: no RECORD file was found for pytest.\n"},
    {"stream": f"\nhint: The package was installed by debian.\n{RESET}"},
    {"stream": "    Found existing installation: pytest 8.3.5\n"},
    {"stream": "Removing intermediate container 9b5a8632420d\n"},
    failed_run(PIP, 1),
]


def test_the_failing_step_its_command_and_pips_error_block():
    failure = feed(*CANNOT_UNINSTALL).failure()
    assert failure is not None and failure.task_fault and not failure.network
    assert (failure.step, failure.instruction, failure.exit_code) == ("3/3", f"RUN {PIP}", 1)
    assert failure.error_lines[:3] == (
        "error: uninstall-no-record-file",
        "× Cannot uninstall pytest 8.3.5",
        "╰─> The package's contents are unknown: no RECORD file was found for pytest.",
    )
    summary = failure.summary()
    assert summary.startswith(f"step 3 `RUN {PIP}` exited 1: error: uninstall-no-record-file")
    assert "hint: The package was installed by debian." in summary
    assert "\n" not in summary and "already the newest version" not in summary
    details = failure.details()
    assert "Collecting pytest==8.4.1" in details and "Reading package lists" not in details
    assert "Removing intermediate container" not in details and RED not in details


def test_apt_error_split_over_chunks_is_one_line():
    failure = feed(
        *step("2/2", "RUN apt-get install -y nosuchpkg"),
        {"stream": "Reading package lists..."},
        {"stream": "\n"},
        {"stream": f"{RED}E:{RESET}"},
        {"stream": f"{RED} {RESET}"},
        {"stream": f"{RED}Unable to locate package nosuchpkg\n{RESET}"},
        failed_run("apt-get install -y nosuchpkg", 100),
    ).failure()
    assert failure.error_lines == ("E: Unable to locate package nosuchpkg",)
    assert failure.exit_code == 100 and failure.task_fault


def test_without_an_error_like_line_the_steps_last_lines_say_why():
    failure = feed(
        *step("2/2", "RUN ./configure && make"),
        {"stream": "checking for gcc... no\n"},
        {"stream": "/bin/sh: 1: make: not found\n"},
        failed_run("./configure && make", 127),
    ).failure()
    assert failure.error_lines == ("checking for gcc... no", "/bin/sh: 1: make: not found")


def test_a_step_that_lost_the_network_is_the_infrastructures():
    failure = feed(
        *step("3/3", f"RUN {PIP}"),
        {
            "stream": "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None)) "
            "after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection."
            "HTTPSConnection object>: Failed to establish a new connection: [Errno -3] Temporary "
            "failure in name resolution')': /simple/pytest/\n"
        },
        {"stream": "ERROR: No matching distribution found for pytest==8.4.1\n"},
        failed_run(PIP, 1),
    ).failure()
    assert failure.network and not failure.task_fault
    assert "the network or the disk failed" in failure.summary()


def test_copy_and_from_failures_have_no_exit_code_and_are_the_tasks():
    copy = feed(
        *step("2/2", "COPY data/ /app/data/"),
        {"error": "COPY failed: file not found in build context: stat data/: file does not exist"},
    ).failure()
    assert copy.task_fault and copy.exit_code is None
    assert copy.summary().startswith("step 2 `COPY data/ /app/data/` failed: COPY failed")
    pull = feed(
        *step("1/2", "FROM python:3.11-slim"),
        {"error": 'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io'},
    ).failure()
    assert pull.keyword == "FROM" and pull.task_fault and not pull.network


def test_a_clean_build_has_no_failure_and_an_error_before_any_step_is_the_engines():
    assert feed(*step("1/1", "FROM x"), {"stream": "Successfully built abc\n"}).failure() is None
    early = feed({"error": "write /var/lib/docker/tmp: no space left on device"}).failure()
    assert early is not None and not early.task_fault and early.summary().endswith("device")


def test_tail_of_a_build_stopped_from_outside():
    log = feed(*step("2/2", "RUN sleep 60"), {"stream": "started\npartial line"})
    assert log.tail() == "Step 2/2 : RUN sleep 60\nstarted\npartial line"
