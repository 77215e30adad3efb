"""`HarborSandbox` on a real container: tbrl's shell contract (cd and export persist, a
command's timeout and output cap hold, files move both ways) over one `bash -c` per call.

The container is driven the way Harbor's Docker environment drives it: `DockerExec` below
is Harbor's `exec`/`upload_file` protocol (stdout and stderr merged, a client-side timeout
raising RuntimeError, `bash -c COMMAND`) over the Docker SDK instead of `docker compose
exec`. The whole agent inside real Harbor is tested in test_harbor_run.py."""

from __future__ import annotations

import asyncio
import io
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tbrl_lib.harbor.environment import INLINE_WRITE_BYTES, HarborSandbox
from tbrl_lib.sandbox import FileTooLarge

pytestmark = pytest.mark.docker


@dataclass
class Result:
    stdout: str | None
    return_code: int


class DockerExec:
    """Harbor's environment protocol on one container (see the module docstring)."""

    def __init__(self, container) -> None:
        self.container = container

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None) -> Result:
        def run():
            code, out = self.container.exec_run(["bash", "-c", command], workdir=cwd or "/app")
            return Result(out.decode(errors="replace") if out else None, code)

        try:
            return await asyncio.wait_for(asyncio.to_thread(run), timeout_sec)
        except TimeoutError as err:
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from err

    async def upload_file(self, source_path, target_path: str) -> None:
        data = Path(source_path).read_bytes()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(Path(target_path).name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        self.container.put_archive(str(Path(target_path).parent), buf.getvalue())


@pytest.fixture(scope="module")
def container(docker_client, base_image):
    box = docker_client.containers.run(
        base_image,
        ["sleep", "infinity"],
        detach=True,
        labels={"tbrl.test": "harbor-environment"},
        network_mode="none",
    )
    yield box
    box.remove(force=True)


def sandbox(container, **kwargs) -> HarborSandbox:
    return HarborSandbox(DockerExec(container), **kwargs)


async def _session(box: HarborSandbox, *commands: str, timeout: float = 30):
    async with box:
        return [await box.run(cmd, timeout) for cmd in commands]


def test_cd_and_export_persist_across_calls_and_survive_exit(container):
    out = asyncio.run(
        _session(
            sandbox(container),
            "mkdir -p /tmp/w && cd /tmp/w && export GREETING='hi there'",
            'pwd; echo "$GREETING"',
            "cd /; exit 3",  # exit still saves the state the command left
            "pwd",
            "echo err >&2; false",
        )
    )
    assert out[1].output == "/tmp/w\nhi there\n"
    assert out[2].exit_code == 3
    assert out[3].output == "/\n"
    assert (out[4].exit_code, out[4].output) == (1, "err\n")  # stderr merged, in order


def test_a_new_sandbox_starts_fresh_in_its_workdir(container):
    asyncio.run(_session(sandbox(container), "cd /tmp && export LEFT=1"))
    out = asyncio.run(_session(sandbox(container, workdir="/app"), 'pwd; echo "[$LEFT]"'))
    assert out[0].output == "/app\n[]\n"


def test_a_command_past_its_timeout_is_killed_inside_the_container(container):
    t0 = time.monotonic()
    (result,) = asyncio.run(_session(sandbox(container), "sleep 60; echo late", timeout=1))
    assert result.timed_out and result.exit_code is None and "late" not in result.output
    assert time.monotonic() - t0 < 15
    listing = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"
    (after,) = asyncio.run(_session(sandbox(container), listing))
    assert "sleep 60 " not in after.output.splitlines() and "sleep infinity " in after.output


def test_output_is_capped_head_and_tail_with_tbrl_notice(container):
    box = sandbox(container, max_output_bytes=1000)
    (result,) = asyncio.run(
        _session(box, "echo START; head -c 300000 /dev/zero | tr '\\0' x; echo; echo END")
    )
    assert result.output.startswith("START\n") and result.output.endswith("END\n")
    assert result.truncated_bytes == len("START\n") + 300_000 + len("\nEND\n") - 1000
    assert "bytes of output omitted" in result.output and len(result.output) < 1200


def test_files_round_trip_small_large_binary_and_relative(container):
    small, large = b"\x00\xffbinary\n", bytes(range(256)) * (INLINE_WRITE_BYTES // 128)

    async def go():
        async with sandbox(container) as box:
            await box.run("mkdir -p /tmp/f && cd /tmp/f")
            await box.write_file("rel.bin", small, mode=0o755)  # relative to the shell's cwd
            await box.write_file("/tmp/f/big/large.bin", large)
            mode = (await box.run("stat -c %a /tmp/f/rel.bin")).output.strip()
            return (
                await box.read_file("/tmp/f/rel.bin"),
                await box.read_file("big/large.bin"),
                await box.read_file("/tmp/f/big/large.bin", max_bytes=10),
                mode,
            )

    got_small, got_large, prefix, mode = asyncio.run(go())
    assert (got_small, got_large, prefix, mode) == (small, large, large[:10], "755")


def test_file_errors_are_the_ones_tbrl_tools_expect(container):
    async def read(path, **kwargs):
        async with sandbox(container, max_file_bytes=100) as box:
            await box.run("head -c 500 /dev/zero > /tmp/five-hundred")
            return await box.read_file(path, **kwargs)

    with pytest.raises(FileNotFoundError):
        asyncio.run(read("/nope"))
    with pytest.raises(IsADirectoryError):
        asyncio.run(read("/tmp"))
    with pytest.raises(FileTooLarge):
        asyncio.run(read("/tmp/five-hundred"))
    assert asyncio.run(read("/tmp/five-hundred", max_bytes=3)) == b"\0\0\0"


def test_a_background_job_neither_blocks_its_command_nor_dies_with_it(container):
    t0 = time.monotonic()
    out = asyncio.run(
        _session(
            sandbox(container),
            "nohup sleep 45 >/dev/null 2>&1 & echo started",
            "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done",
        )
    )
    assert out[0].output == "started\n" and time.monotonic() - t0 < 20
    assert "sleep 45 " in out[1].output.splitlines()
