"""The managed vLLM server's process: it does not outlive a run killed outright.

`serving` stops the server in a `finally`, which a SIGKILLed run never reaches; the kernel's
parent-death signal covers that case. The server here is any long-running command: what is
tested is the process tie, not vLLM (tests/train/test_vllm_real.py starts the real one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")

RUN = """
import sys
from pathlib import Path
from tbrl_lib.train.vllm.server import start_tied
with Path(sys.argv[1]).open("ab") as log:
    server = start_tied([sys.executable, "-c", "import time; time.sleep(300)"], log)
print(server.pid, flush=True)
import time; time.sleep(300)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
    return state != "Z"  # a zombie waits only for its reaper


def test_the_server_dies_with_a_run_killed_outright(tmp_path: Path):
    run = subprocess.Popen(
        [sys.executable, "-c", RUN, str(tmp_path / "server.log")],
        stdout=subprocess.PIPE,
        text=True,
    )
    server_pid = int(run.stdout.readline())
    try:
        assert alive(server_pid)
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
        deadline = time.monotonic() + 10
        while alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(server_pid), "the server outlived its SIGKILLed run"
    finally:
        for pid in (run.pid, server_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
