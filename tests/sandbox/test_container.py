"""Containers: limits and isolation as the daemon sees them, files, OOM, fork bombs,
wall clock, dead containers, and removal however the rollout ends."""

from __future__ import annotations

import asyncio
import time

import pytest

from tbrl_lib.sandbox import (
    FileTooLarge,
    SandboxConfig,
    SandboxError,
    SandboxLimitExceeded,
    open_sandbox,
)
from tbrl_lib.sandbox.backends.docker.container import KEEP_CAPS
from tbrl_lib.sandbox.backends.docker.pristine_volume import PRISTINE_MOUNT
from tbrl_lib.sandbox.backends.docker.runtime_volume import INIT, RUNTIME_MOUNT
from tests.sandbox.conftest import make_task, run

pytestmark = pytest.mark.docker


def test_limits_labels_and_isolation_as_the_daemon_sees_them(docker_client, base_image):
    task = make_task("limits-check", cpus=0.5, memory_mb=300, pids=100)

    async def body():
        async with open_sandbox(task, SandboxConfig(run_id="run-42")) as sb:
            info = docker_client.api.inspect_container(sb.container_id)
            hc, labels = info["HostConfig"], info["Config"]["Labels"]
            assert hc["NetworkMode"] == "none"
            assert hc["NanoCpus"] == 500_000_000
            assert hc["Memory"] == hc["MemorySwap"] == 300 * 1024 * 1024
            assert hc["PidsLimit"] == 100
            assert hc["CapDrop"] == ["ALL"] and set(hc["CapAdd"]) == set(KEEP_CAPS)
            assert "no-new-privileges" in hc["SecurityOpt"]
            assert not hc["Privileged"] and not hc["Binds"]
            # PID 1 is tbrl's init from the read-only runtime volume; the only other mount is
            # the image's pristine tools and packages, read-only too.
            assert info["Config"]["Entrypoint"] == INIT
            mounts = {m["Destination"]: m for m in info["Mounts"]}
            assert set(mounts) == {RUNTIME_MOUNT, PRISTINE_MOUNT}
            assert not any(m["RW"] for m in mounts.values())
            r = await sb.run(
                f"touch {PRISTINE_MOUNT}/usr/bin/x; ls {PRISTINE_MOUNT}/usr/bin/python3"
            )
            assert "Read-only file system" in r.output and "python3" in r.output
            r = await sb.run("cat /proc/1/cmdline | tr '\\0' ' '")
            assert "init.py" in r.output
            assert labels["tbrl.run"] == "run-42" and labels["tbrl.task"] == "limits-check"
            _, pid, _ = labels["tbrl.owner"].rsplit(":", 2)
            assert int(pid) > 0
            r = await sb.run("ls /var/run/docker.sock; cat /proc/self/status | grep CapEff")
            assert "No such file" in r.output and "0000000000000000" not in r.output
            return sb.container_id  # network off, pushed against: test_limits.py

    cid = run(body())
    assert not docker_client.api.containers(all=True, filters={"id": cid})


def test_internet_follows_the_task_and_the_config_override(docker_client, base_image):
    async def mode(task, config=None):
        async with open_sandbox(task, config) as sb:
            return docker_client.api.inspect_container(sb.container_id)["HostConfig"]["NetworkMode"]

    assert run(mode(make_task(allow_internet=True))) in ("bridge", "default")
    assert run(mode(make_task(allow_internet=True), SandboxConfig(allow_internet=False))) == "none"


def test_files_round_trip_with_directories_modes_and_limits(task):
    config = SandboxConfig(max_file_bytes=1_000_000)

    async def body():
        async with open_sandbox(task, config) as sb:
            blob = bytes(range(256)) * 10
            await sb.write_file("/data/deep/dir/blob.bin", blob)
            assert await sb.read_file("/data/deep/dir/blob.bin") == blob
            await sb.write_file("/usr/local/bin/hello", "#!/bin/sh\necho hello\n", mode=0o755)
            assert (await sb.run("hello")).output == "hello\n"
            await sb.run("mkdir -p /app/sub && cd /app/sub")
            await sb.write_file("rel.txt", "relative")
            assert (await sb.run("cat /app/sub/rel.txt")).output == "relative"
            await sb.write_files({"a.txt": "A", "nested/b.txt": b"B"}, dest="/tests")
            assert await sb.read_dir("/tests") == {"a.txt": b"A", "nested/b.txt": b"B"}
            assert await sb.read_file("/data/deep/dir/blob.bin", max_bytes=10) == blob[:10]
            assert (await sb.run("stat -c %a /tmp")).output == "1777\n"  # parents untouched
            with pytest.raises(FileNotFoundError, match="/nope"):
                await sb.read_file("/nope")
            with pytest.raises(IsADirectoryError):
                await sb.read_file("/tests")
            with pytest.raises(FileTooLarge, match="max_file_bytes"):
                await sb.write_file("/big", b"x" * 1_000_001)
            await sb.run("head -c 2000000 /dev/zero > /big2")
            with pytest.raises(FileTooLarge):
                await sb.read_file("/big2")
            assert sb.stats.bytes_written > len(blob) and sb.stats.bytes_read >= len(blob)

    run(body())


def test_memory_hog_is_oom_killed_and_reported(base_image):
    async def body():
        async with open_sandbox(make_task(memory_mb=128)) as sb:
            r = await sb.run("python3 -c \"x = b'a' * (1024 ** 3)\"", timeout=60)
            assert (
                r.exit_code == 137 and "out-of-memory killer" in r.output and "128 MB" in r.output
            )
            assert sb.stats.extra["oom_kills"] == 1
            assert (await sb.run("echo alive")).output == "alive\n"

    run(body())


@pytest.mark.parametrize(
    "bomb",
    [
        "bomb() { bomb | bomb & bomb; }; bomb",  # in the foreground: caught while it runs
        ":(){ :|:& };:",  # backgrounds itself: caught by the next fork
    ],
)
def test_fork_bomb_ends_the_rollout_as_a_pids_limit(docker_client, base_image, bomb):
    async def body():
        async with open_sandbox(make_task("fork-bomb", pids=64)) as sb:
            t0 = time.monotonic()
            with pytest.raises(SandboxLimitExceeded) as info:
                await sb.run(bomb, timeout=8)
                while time.monotonic() - t0 < 40:  # the agent carries on; its forks fail
                    await sb.run("sleep 0.2; ls /", timeout=8)
            assert info.value.kind == "pids" and time.monotonic() - t0 < 40
            with pytest.raises(SandboxLimitExceeded):
                await sb.run("echo more")  # the rollout stays ended
            return sb.container_id

    cid = run(body())
    assert not docker_client.api.containers(all=True, filters={"id": cid})


def test_wall_clock_limit_ends_the_rollout(base_image):
    async def body():
        async with open_sandbox(make_task(), SandboxConfig(wall_clock_s=3)) as sb:
            t0 = time.monotonic()
            with pytest.raises(SandboxLimitExceeded) as info:
                await sb.run("sleep 100", timeout=60)
            assert info.value.kind == "wall_clock" and time.monotonic() - t0 < 8
            with pytest.raises(SandboxLimitExceeded):
                await sb.run("echo again")

    run(body())


def test_container_killed_from_outside_is_an_infra_error(docker_client, task):
    async def body():
        async with open_sandbox(task) as sb:
            await sb.run("true")
            docker_client.api.kill(sb.container_id)
            with pytest.raises(SandboxError) as info:
                await sb.run("echo hi", timeout=10)
            assert info.value.kind == "container_died"
            assert not isinstance(info.value, SandboxLimitExceeded)

    run(body())


def test_container_removed_on_error_and_on_cancellation(docker_client, task):
    seen: list[str] = []

    async def failing():
        async with open_sandbox(task) as sb:
            seen.append(sb.container_id)
            raise RuntimeError("agent crashed")

    with pytest.raises(RuntimeError):
        run(failing())

    async def cancelled():
        async def rollout():
            async with open_sandbox(task) as sb:
                seen.append(sb.container_id)
                await sb.run("sleep 60", timeout=120)

        job = asyncio.ensure_future(rollout())
        while len(seen) < 2:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        job.cancel()
        await asyncio.gather(job, return_exceptions=True)

    run(cancelled())
    for cid in seen:
        assert not docker_client.api.containers(all=True, filters={"id": cid})


def test_a_slow_reap_of_leftovers_does_not_count_against_the_start(
    docker_client, base_image, monkeypatch
):
    """A wedged leftover container can take minutes to remove; the first sandbox of a
    process stops waiting for that reap and starts anyway, within its own start limit."""
    from tbrl_lib.docker import reaper
    from tbrl_lib.sandbox.backends.docker import container

    def slow_reap(client, host_name):
        time.sleep(15)  # longer than the start limit below: waiting for it would fail

    monkeypatch.setattr(reaper, "reap_once", slow_reap)
    monkeypatch.setattr(container, "REAP_WAIT_S", 0.5, raising=False)

    async def body():
        async with open_sandbox(make_task("slow-reap"), SandboxConfig(start_timeout_s=10)) as sb:
            return (await sb.run("echo up")).output.strip()

    assert run(body()) == "up"
