"""Storage limits on this machine's engine (overlay2 on ext4: no `--storage-opt size`): the
meter ends a sandbox past its cap and removes it at once, counts an image's volumes, holds
tasks that state no cap to `default_storage_mb`; the guard refuses what the disk cannot hold;
the meter itself is locked down and leaves with its process. The limits table's storage rows
(20 GB at once, 8 GB with dd, through `run_rollout`) are in `test_limits.py`."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
import time

import pytest
from docker.errors import NotFound

from tbrl_lib.docker import reaper
from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.sandbox import SandboxConfig, SandboxError, SandboxLimitExceeded, open_sandbox
from tbrl_lib.sandbox.backends.docker import storage
from tests.conftest import REPO
from tests.sandbox.conftest import make_task, run


def test_a_limit_survives_pickling_with_what_it_recorded():
    """The ray backend raises a node's limit in the caller: kind, message and numbers kept."""
    err = SandboxLimitExceeded("storage", "wrote 5000 MB", limit=4096, used=5000, unit="MB")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is SandboxLimitExceeded and str(back) == "wrote 5000 MB"
    assert back.record() == {"kind": "storage", "limit": 4096, "used": 5000, "unit": "MB"}
    assert not back.infra


@pytest.mark.docker
def test_the_default_cap_ends_a_writer_and_removes_its_sandbox_at_once(docker_client, base_image):
    async def body():
        config = SandboxConfig(default_storage_mb=300)
        async with open_sandbox(make_task("storage-default"), config) as sb:
            assert sb.limits_applied["storage"].startswith("300 MB: tbrl's storage meter")
            await sb.run("head -c 100M /dev/zero > /app/fits")  # under the cap: nothing happens
            await asyncio.sleep(2 * storage.POLL_S)
            assert (await sb.run("ls -s --block-size=M /app/fits")).output.startswith("100M")
            started = time.monotonic()
            with pytest.raises(SandboxLimitExceeded) as info:
                await sb.run("fallocate -l 1G /app/big; sleep 60", timeout=90)
            assert time.monotonic() - started < 30  # not the 60 s sleep: ended, removed
            with pytest.raises(NotFound):  # gone before the rollout's own close
                docker_client.api.inspect_container(sb.container_id)
            with pytest.raises(SandboxLimitExceeded):
                await sb.run("echo more")  # the rollout stays ended
            return info.value

    err = run(body())
    assert err.kind == "storage" and err.limit == 300 and err.used > 300  # mid-fallocate: <1124
    assert "300 MB" in str(err) and "removed" in str(err)


@pytest.mark.docker
def test_an_image_volume_counts_and_goes_with_its_container(docker_client, base_image):
    """Writes to an image's VOLUME land outside the writable layer: measured as well."""
    task = make_task("storage-volume", dockerfile=f"FROM {BASE_IMAGE}\nVOLUME /data\n")

    async def body():
        async with open_sandbox(task, SandboxConfig(default_storage_mb=200)) as sb:
            info = docker_client.api.inspect_container(sb.container_id)
            (volume,) = [m["Name"] for m in info["Mounts"] if m["Destination"] == "/data"]
            with pytest.raises(SandboxLimitExceeded):
                await sb.run("fallocate -l 500M /data/big; sleep 60", timeout=90)
            return volume

    volume = run(body())
    with pytest.raises(NotFound):
        docker_client.api.inspect_volume(volume)


@pytest.mark.docker
def test_the_guard_refuses_what_the_disk_cannot_hold(base_image):
    """A cap beyond the engine's free space, or one that fits only without the open
    sandboxes' caps: refused before any container exists, naming the space and the setting."""

    async def body():
        async with open_sandbox(make_task("storage-guard-probe", storage_mb=64)) as sb:
            free_mb = storage.meter_for(sb.host).free // storage.MIB
        with pytest.raises(SandboxError) as alone:
            async with open_sandbox(make_task("storage-guard", storage_mb=free_mb + 1024)):
                pass
        most = SandboxConfig(default_storage_mb=int(free_mb * 0.6))
        async with open_sandbox(make_task("storage-guard-a"), most):
            with pytest.raises(SandboxError) as second:
                async with open_sandbox(make_task("storage-guard-b"), most):
                    pass
        async with open_sandbox(make_task("storage-guard-c"), most):
            pass  # the first one's cap is given back with it
        return alone.value, second.value

    alone, second = run(body())
    assert alone.kind == second.kind == "disk_space" and alone.infra
    assert "GiB free" in str(alone) and "storage-guard's storage_mb" in str(alone)
    assert "sandbox.default_storage_mb" in str(second) and "1 open" in str(second)


@pytest.mark.docker
def test_the_guard_counts_the_engines_other_sandboxes(docker_client, base_image):
    """A sandbox of another process on the engine (another rank, another run, another Ray
    actor: here a container of the test's own carrying the cap label) counts with its whole
    cap: a cap that fits beside this process's sandboxes alone is refused beside it."""

    async def body():
        async with open_sandbox(make_task("storage-elsewhere-probe", storage_mb=64)) as sb:
            free_mb = storage.meter_for(sb.host).free // storage.MIB
        half = SandboxConfig(default_storage_mb=int(free_mb * 0.6))
        other = docker_client.containers.run(
            BASE_IMAGE,
            ["sleep", "120"],
            detach=True,
            network_mode="none",
            labels={storage.LABEL_CAP: str(int(free_mb * 0.6)), reaper.LABEL_RUN: "elsewhere"},
        )
        try:
            with pytest.raises(SandboxError) as refused:
                async with open_sandbox(make_task("storage-elsewhere"), half):
                    pass
        finally:
            other.remove(force=True)
        async with open_sandbox(make_task("storage-elsewhere"), half):
            pass  # the other one gone, the same cap fits
        return refused.value

    refused = run(body())
    assert refused.kind == "disk_space" and "1 open" in str(refused)


@pytest.mark.docker
def test_the_meter_is_locked_down_and_leaves_with_its_process(docker_client, base_image):
    script = (
        "import asyncio, os\n"
        "from tbrl_lib.sandbox import open_sandbox\n"
        "from tests.sandbox.conftest import make_task\n"
        "async def main():\n"
        "    async with open_sandbox(make_task('meter-exit', storage_mb=64)) as sb:\n"
        "        await sb.run('true')\n"
        "        print(os.getpid(), flush=True)\n"
        "        await asyncio.sleep(30)\n"
        "asyncio.run(main())\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        pid = int(child.stdout.readline())
        (meter,) = [
            c
            for c in docker_client.api.containers(filters={"label": storage.LABEL_ROLE})
            if c["Labels"][reaper.LABEL_OWNER].split(":")[1] == str(pid)
        ]
        hc = docker_client.api.inspect_container(meter["Id"])["HostConfig"]
        assert hc["NetworkMode"] == "none" and hc["ReadonlyRootfs"] and hc["CapDrop"] == ["ALL"]
        assert hc["CapAdd"] == ["DAC_READ_SEARCH"] and hc["AutoRemove"]
        (mount,) = hc["Mounts"]
        assert mount["ReadOnly"] and mount["BindOptions"]["NonRecursive"]
    finally:
        child.kill()  # SIGKILL: no atexit; the meter ends when its stdin closes
        child.wait()
        for c in docker_client.api.containers(all=True, filters={"label": "tbrl.task=meter-exit"}):
            if c["Labels"][reaper.LABEL_OWNER].split(":")[1] == str(child.pid):
                docker_client.api.remove_container(c["Id"], force=True)  # its sandbox
    for _ in range(150):
        try:
            docker_client.api.inspect_container(meter["Id"])
        except NotFound:
            return
        time.sleep(0.2)
    pytest.fail("the storage meter outlived its process by 30 s")
