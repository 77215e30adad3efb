"""`DockerSandbox`: one rollout's container, its persistent shell, files and hard limits.

Container settings (see `_host_config`): the task's cpus / memory (swap off) / pids /
storage limits; network `none` unless the task (or config) allows internet; all
capabilities dropped except a small set that package installs and servers need;
`no-new-privileges`; no Docker socket or host mounts; logging driver `none` (output goes
through the shell, not the daemon's log files); tbrl's runtime volume mounted read-only at
`/.tbrl-rt`, whose `init.py` is PID 1: it ignores every signal from inside and reaps
orphans, so the agent can kill its shell (a new one starts) but not its container. Labels: `tbrl.owner` (host:pid:start), `tbrl.run`, `tbrl.task` (see `reaper.py`), and the
caller's (`tbrl.node` from the `ray` backend).

Storage: the task's `storage_mb`, else `SandboxConfig.default_storage_mb`, is reserved on
the engine's disk before the container is created (refused when the disk cannot hold it:
`storage.py`), asked of the driver as `--storage-opt size` where it takes it (overlay2 on
xfs with pquota), and measured on every host by the engine's storage meter; a sandbox past
it is removed at once and the rollout ends as `SandboxLimitExceeded` kind `storage`.
`limits_applied["storage"]` says how it was held.

Failures are raised, never returned as a command result, and classified by cause (see
`base.py`): a dead daemon (`daemon_unreachable`), a container that vanished
(`container_gone`) or was stopped from outside (`container_died`) are infrastructure; an
OOM kill that took the shell down (`SandboxLimitExceeded` kind `memory`), the pids limit
exhausted (`pids`: checked when a command times out, every 5 s while one runs long, and
after output showing a failed fork), writes past the storage limit (`storage`), the
rollout's wall-clock limit (`wall_clock`; commands are clipped to the deadline, and a timer
kills the container a few seconds after it as a backstop), a shell that died and cannot be
restarted (`shell_broken`) and an operation the engine refuses on a running container
(`exec_failed`) are the agent's doing. Once raised, every later call re-raises it. A
*command* killed by the OOM killer while the shell survives is returned with exit code
137 and a notice (like a terminal's "Killed"); OOM kills are read from the daemon's
`oom` events, since Docker sets `State.OOMKilled` only when pid 1 dies.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from docker.errors import APIError, DockerException, InvalidVersion, NotFound
from docker.types import LogConfig, Mount

from tbrl_lib.docker import reaper
from tbrl_lib.sandbox.backends.docker import storage
from tbrl_lib.sandbox.backends.docker.files import FileTransfer
from tbrl_lib.sandbox.backends.docker.hosts import Host, acquire_slot, release_slot
from tbrl_lib.sandbox.backends.docker.images import ensure_image
from tbrl_lib.sandbox.backends.docker.isolated_exec import exec_with_deadline
from tbrl_lib.sandbox.backends.docker.pristine_volume import PRISTINE_MOUNT, ensure_pristine_volume
from tbrl_lib.sandbox.backends.docker.runtime_volume import (
    INIT,
    RUNTIME_MOUNT,
    ensure_runtime_volume,
)
from tbrl_lib.sandbox.backends.docker.shell import PersistentShell
from tbrl_lib.sandbox.base import (
    CommandResult,
    ExecResult,
    IsolatedCommand,
    SandboxClosed,
    SandboxError,
    SandboxLimitExceeded,
    SandboxStats,
)
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

log = logging.getLogger(__name__)

KEEP_CAPS = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "NET_BIND_SERVICE",
)
"""Capabilities a root shell needs for ordinary task work (apt, pip, chown, servers)."""
WALL_CLOCK_GRACE_S = 5.0
REAP_WAIT_S = 30.0
"""How long a first sandbox waits for the automatic reap of dead processes' leftovers before
going on without it (a wedged leftover container can take minutes to remove)."""
"""`run()` clips each command to the deadline itself; the timer that kills the container
fires this much later, as the backstop for anything still holding the sandbox."""
PIDS_NEAR_LIMIT = 3
PIDS_WATCH_EVERY_S = 5.0
"""A command running longer than this has the container's pids count checked this often."""
OOM_EVENT_WAIT_S = 1.0
"""How long a SIGKILLed command waits for the engine's `oom` event (see `_note_oom`)."""


class DockerSandbox(FileTransfer):
    """A `Sandbox` backed by one Docker container. Use via `open_sandbox`."""

    runtime_dir = RUNTIME_MOUNT
    pristine_dir = PRISTINE_MOUNT

    def __init__(
        self, task: Task, config: SandboxConfig | None = None, labels: dict[str, str] | None = None
    ) -> None:
        self.task = task
        self.labels = dict(labels or {})
        """More labels for the container (the `ray` backend adds `tbrl.node`)."""
        self.config = config or SandboxConfig()
        self.stats = SandboxStats()
        self.host: Host | None = None
        self.container_id: str | None = None
        self.shell: PersistentShell | None = None
        self.limits_applied: dict[str, str] = {}
        self.started_at = 0.0
        self.deadline = float("inf")
        self._wall_timer: asyncio.TimerHandle | None = None
        self._expired = False
        self._closed = False
        self._failed: SandboxError | None = None
        """Set once an infrastructure failure or limit ended the rollout; later calls re-raise it."""
        self._runtime_volume = ""
        self._pristine_volume = ""
        self._storage: storage.SandboxStorage | None = None
        self._storage_hit: SandboxLimitExceeded | None = None
        """Set (from the meter's thread) when the sandbox wrote past its storage limit."""
        self._removed_at_limit = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> DockerSandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def workdir(self) -> str:
        return self.config.workdir

    @property
    def storage_mb(self) -> int | None:
        """The storage cap: the task's own, else the run's default for tasks that state none."""
        return self.task.limits.storage_mb or self.config.default_storage_mb

    @property
    def wall_clock_s(self) -> float:
        limits = self.task.limits
        return self.config.wall_clock_s or (limits.agent_timeout_sec + limits.test_timeout_sec + 60)

    async def start(self, host: Host | None = None) -> None:
        """Place, create and start the container and its shell (`host` given by a pool)."""
        t0 = time.monotonic()
        reaper.install_handlers()  # here, on the event loop's (main) thread, not in a worker
        try:
            if host is None:
                host = await acquire_slot(
                    self.config.docker.hosts, timeout=max(self.wall_clock_s, 60)
                )
            self.host = host
            image = await self._prepare(host)  # reap + build have their own limits
            await asyncio.wait_for(self._create_and_start(image), self.config.start_timeout_s)
        except TimeoutError as err:
            await self.close()
            raise SandboxError(
                f"task {self.task.id}: container not ready within "
                f"{self.config.start_timeout_s:.0f}s on {self.host.name}",
                kind="start_timeout",
            ) from err
        except BaseException:
            await self.close()
            raise
        self.stats.startup_seconds = time.monotonic() - t0
        self.arm_wall_clock()

    def arm_wall_clock(self) -> None:
        """Start the rollout's wall clock now (a pool arms it at hand-off, not at warm-up)."""
        self.started_at = time.monotonic()
        self.deadline = self.started_at + self.wall_clock_s
        if self._wall_timer is not None:
            self._wall_timer.cancel()
        loop = asyncio.get_running_loop()
        self._wall_timer = loop.call_later(
            self.wall_clock_s + WALL_CLOCK_GRACE_S, self._on_wall_clock
        )

    def _on_wall_clock(self) -> None:
        self._expired = True
        log.warning(
            "tbrl: task %s hit its wall-clock limit (%.0fs); killing its container",
            self.task.id,
            self.wall_clock_s,
        )
        asyncio.ensure_future(self._kill_container())

    async def _kill_container(self) -> None:
        if self.host and self.container_id:
            try:
                await self.host.call(
                    self.host.client.api.kill,
                    self.container_id,
                    what="killing the container at the wall-clock limit",
                )
            except (DockerException, SandboxError) as err:
                log.debug(
                    "wall-clock kill of %s: %s (close() removes it)", self.container_id[:12], err
                )

    async def _prepare(self, host: Host) -> str:
        """Reap leftovers (once per host and process) and build the image, outside the start
        timeout: neither is the container being slow to start."""
        reaping = asyncio.ensure_future(
            host.call(reaper.reap_once, host.client, host.name, what="reaping leftovers")
        )
        reaping.add_done_callback(_log_late_failure)
        try:
            await asyncio.wait_for(asyncio.shield(reaping), REAP_WAIT_S)
        except TimeoutError:
            log.warning(
                "tbrl: reaping leftovers on %s takes over %.0fs; going on without "
                "waiting (`tbrl docker reap` finishes it)",
                host.name,
                REAP_WAIT_S,
            )
        self._runtime_volume = await ensure_runtime_volume(host)
        image = await ensure_image(self.task, host)
        self._pristine_volume = await ensure_pristine_volume(host, image, self._runtime_volume)
        return image

    async def _create_and_start(self, image: str) -> None:
        host = self.host
        assert host is not None
        self.container_id = await host.call(
            self._create, host, image, what="creating the container"
        )
        await host.call(host.client.api.start, self.container_id, what="starting the container")
        self.shell = PersistentShell(
            host, self.container_id, self.config.workdir, self.config.max_output_bytes
        )
        await self.shell.start()

    def _create(self, host: Host, image: str) -> str:
        api = host.client.api
        cap = self.storage_mb
        if cap is not None:
            origin = (
                f"task {self.task.id}'s storage_mb"
                if self.task.limits.storage_mb
                else "sandbox.default_storage_mb"
            )
            self._storage = storage.SandboxStorage(host, cap, origin)  # or refused
        want_quota = cap is not None and host.storage_opt_supported is not False
        labels = {
            reaper.LABEL_OWNER: reaper.owner_label(),
            reaper.LABEL_RUN: self.config.run_id,
            reaper.LABEL_TASK: self.task.id,
            **({storage.LABEL_CAP: str(cap)} if cap is not None else {}),
            **self.labels,
        }
        while True:
            try:
                created = api.create_container(
                    image,
                    entrypoint=INIT,
                    command=[],
                    labels=labels,
                    host_config=self._host_config(api, cap if want_quota else None),
                )
                break
            except APIError as err:
                if want_quota and "storage" in str(err).lower():
                    host.storage_opt_supported = want_quota = False
                    log.info(
                        "tbrl: docker host %s takes no --storage-opt size (%s); storage limits "
                        "are held there by measuring (tbrl's storage meter)",
                        host.name,
                        err.explanation or err,
                    )
                    continue
                raise SandboxError(
                    f"task {self.task.id}: creating the container failed: {err.explanation or err}",
                    kind="create_failed",
                ) from err
        cid = created["Id"]
        reaper.register(cid, host.client)
        if want_quota:
            host.storage_opt_supported = True
        if self._storage is not None:
            info = api.inspect_container(cid)
            self.limits_applied["storage"] = self._storage.watch(
                info, want_quota, self._on_storage_over
            )
            if self._closed:  # closed while this ran on its thread (a start timeout)
                self._storage.release()
        return cid

    def _on_storage_over(self, used: int) -> None:
        """The meter saw the sandbox past its cap (on a docker thread): end the rollout and
        remove the container and its volumes now, to give the space back."""
        cap = self.storage_mb
        self._storage_hit = SandboxLimitExceeded(
            "storage",
            f"task {self.task.id}: the sandbox wrote {used / storage.MIB:,.0f} MB, past its "
            f"storage limit of {cap} MB; it was removed (container and volumes) to give the "
            "space back - the rollout is ended",
            limit=cap,
            used=round(used / storage.MIB),
            unit="MB",
        )
        log.warning("tbrl: %s", self._storage_hit)
        try:
            self.host.client.api.remove_container(self.container_id, force=True, v=True)
        except DockerException as err:
            log.warning("tbrl: removing %s at its storage limit: %s", self.container_id[:12], err)
        finally:
            self._removed_at_limit.set()

    def _host_config(self, api, storage_mb: int | None):
        limits = self.task.limits
        internet = self.config.allow_internet
        internet = limits.allow_internet if internet is None else internet
        mem = f"{limits.memory_mb}m"
        self.limits_applied.update(
            cpus=f"{limits.cpus:g}",
            memory=f"{limits.memory_mb} MB",
            pids=str(limits.pids),
            network="bridge" if internet else "none",
        )
        return api.create_host_config(
            nano_cpus=int(limits.cpus * 1e9),
            mem_limit=mem,
            memswap_limit=mem,
            pids_limit=limits.pids,
            network_mode="bridge" if internet else "none",
            cap_drop=["ALL"],
            cap_add=sorted(set(KEEP_CAPS) | set(self.config.cap_add)),
            security_opt=["no-new-privileges"],
            init=False,
            mounts=[
                Mount(RUNTIME_MOUNT, self._runtime_volume, type="volume", read_only=True),
                Mount(PRISTINE_MOUNT, self._pristine_volume, type="volume", read_only=True),
            ],
            log_config=LogConfig(type="none"),
            storage_opt={"size": f"{storage_mb}M"} if storage_mb else None,
        )

    async def close(self) -> None:
        """Remove the container (idempotent); errors are logged, the reaper is the backstop."""
        if self._closed:
            return
        self._closed = True
        if self._wall_timer is not None:
            self._wall_timer.cancel()
        if self.shell is not None:
            self.shell.close()
        host, cid = self.host, self.container_id
        if self._storage_hit is not None and host is not None:  # its removal is under way
            await host.call(self._removed_at_limit.wait, REAP_WAIT_S, what="removing it")
        try:
            if host is not None and cid is not None:
                try:
                    await host.call(
                        host.client.api.remove_container,
                        cid,
                        force=True,
                        v=True,  # an image's VOLUMEs: anonymous, this container's own
                        what="removing the container",
                    )
                    reaper.unregister(cid)
                except NotFound:
                    reaper.unregister(cid)
                except SandboxError as err:
                    if err.kind == "daemon_unreachable":  # nothing to retry at exit
                        reaper.unregister(cid)
                    log.warning(
                        "tbrl: could not remove container %s on %s: %s (`tbrl docker "
                        "reap` removes it once the daemon is back)",
                        cid[:12],
                        host.name,
                        err,
                    )
                except Exception as err:  # noqa: BLE001 - any failure: the reaper is the backstop
                    log.warning(
                        "tbrl: could not remove container %s on %s: %s (the reaper will)",
                        cid[:12],
                        host.name,
                        err,
                    )
        finally:
            if self._storage is not None:
                self._storage.release()
            if host is not None:
                await release_slot(host)

    # ------------------------------------------------------------------ commands
    def _check_open(self) -> None:
        if self._storage_hit is not None:
            raise self._storage_hit
        if self._expired:
            raise SandboxLimitExceeded(
                "wall_clock",
                f"task {self.task.id}: rollout exceeded its wall-clock limit of "
                f"{self.wall_clock_s:.0f}s (set SandboxConfig.wall_clock_s to change it)",
                limit=self.wall_clock_s,
                unit="s",
            )
        if self._failed is not None:
            raise self._failed
        if self._closed or self.shell is None:
            raise SandboxClosed(
                f"task {self.task.id}: the sandbox is closed (used after its "
                "`async with` block ended)"
            )

    async def run(self, cmd: str, timeout: float | None = None) -> CommandResult:
        self._check_open()
        wanted = timeout if timeout is not None else self.config.command_timeout_s
        remaining = self.deadline - time.monotonic()
        effective = max(0.01, min(wanted, remaining))
        since = time.time()
        try:
            result = await self._run_watched(cmd, effective)
        except SandboxLimitExceeded as err:
            self._failed = err
            raise
        except (
            SandboxError,
            DockerException,
        ) as err:  # blamed by cause (a vanished container, too)
            self._failed = await self._blame(err, "running a command", since)
            raise self._failed from err
        self._check_open()
        if result.timed_out and effective < wanted:
            self._failed = SandboxLimitExceeded(
                "wall_clock",
                f"task {self.task.id}: rollout reached its wall-clock limit of "
                f"{self.wall_clock_s:.0f}s during a command",
                limit=self.wall_clock_s,
                unit="s",
            )
            raise self._failed
        if result.exit_code == 137 or result.timed_out:
            result = await self._note_oom(result, since)
        if self.shell.pids_limit_hits:
            self._failed = SandboxLimitExceeded(
                "pids",
                f"task {self.task.id}: the process limit ({self.task.limits.pids} pids) "
                "refused forks (a fork bomb or runaway spawning) - the rollout is ended",
                limit=self.task.limits.pids,
                unit="pids",
            )
            raise self._failed
        if "Resource temporarily unavailable" in result.output[-4096:]:
            await self._check_pids(margin=0.2)  # a fork failed: is the pids limit exhausted?
        self.stats.commands += 1
        self.stats.command_seconds += result.duration_s
        self.stats.bytes_out = self.shell.bytes_out
        return result

    async def _run_watched(self, cmd: str, timeout: float) -> CommandResult:
        """The shell command, with the pids cgroup polled while it runs past a few seconds."""
        running = asyncio.ensure_future(self.shell.run(cmd, timeout, before_kill=self._check_pids))
        if timeout <= PIDS_WATCH_EVERY_S:
            return await running
        watch = asyncio.ensure_future(self._watch_pids())
        try:
            done, _ = await asyncio.wait({running, watch}, return_when=asyncio.FIRST_COMPLETED)
            if watch in done:
                watch.result()  # raises SandboxLimitExceeded("pids")
            return await running
        finally:
            for fut in (running, watch):
                if not fut.done():
                    fut.cancel()
            await asyncio.gather(running, watch, return_exceptions=True)

    async def _watch_pids(self) -> None:
        while True:
            await asyncio.sleep(PIDS_WATCH_EVERY_S)
            await self._check_pids()

    async def _state(self) -> dict:
        info = await self.host.call(
            self.host.client.api.inspect_container,
            self.container_id,
            what="inspecting the container",
        )
        return info["State"]

    async def _oom_since(self, since: float) -> bool:
        """Did the kernel OOM-kill anything in this container since `since` (epoch s)?"""

        def query() -> bool:
            events = self.host.client.api.events(
                since=f"{since - 0.5:.6f}",
                until=f"{time.time():.6f}",
                decode=True,
                filters={"container": self.container_id, "event": "oom"},
            )
            try:
                return any(True for _ in events)
            finally:
                events.close()

        return await self.host.call(query, what="reading OOM events")

    async def _blame(self, err: Exception, what: str, since: float) -> SandboxError:
        """The `SandboxError` for a failure, classified by cause (see `base.py`): the engine
        unreachable, the container gone or stopped from outside -> infrastructure; an OOM
        kill -> the memory limit; anything else while the container runs -> the agent's. A
        container the storage meter removed is the storage limit."""
        if self._storage_hit is not None:  # raised once the space is given back
            await self.host.call(self._removed_at_limit.wait, REAP_WAIT_S, what="removing it")
            return self._storage_hit
        if self._expired:
            self._check_open()
        if isinstance(err, SandboxError) and err.kind == "daemon_unreachable":
            return err
        try:
            state = await self._state()
        except NotFound:
            return SandboxError(
                f"task {self.task.id}: container {self.container_id[:12]} "
                f"disappeared during {what}",
                kind="container_gone",
            )
        except SandboxError as unreachable:
            return unreachable
        if await self._oom_since(since):
            return SandboxLimitExceeded(
                "memory",
                f"task {self.task.id}: the shell or container was OOM-killed (memory "
                f"limit {self.task.limits.memory_mb} MB)",
                limit=self.task.limits.memory_mb,
                unit="MB",
            )
        if not state.get("Running"):
            return SandboxError(
                f"task {self.task.id}: container stopped from outside during {what} "
                f"(exit {state.get('ExitCode')}, {state.get('Error') or 'no error'})",
                kind="container_died",
            )
        if isinstance(err, SandboxLimitExceeded):
            return err
        kind = "shell_broken" if isinstance(err, SandboxError) else "exec_failed"
        return SandboxError(
            f"task {self.task.id}: {what} failed inside the running container "
            f"(the agent's doing): {err}",
            kind=kind,
        )

    # ------------------------------------------------------------------ isolated operations
    async def exec_isolated(self, command: IsolatedCommand) -> ExecResult:
        self._check_alive()
        since = time.time()
        try:
            return await self.host.call(
                exec_with_deadline,
                self.host.client.api,
                self.container_id,
                command,
                what="an isolated exec",
            )
        except (DockerException, SandboxError, OSError) as err:
            raise await self._blame(err, "an isolated exec", since) from err

    async def put_archive(self, path: str, tar: bytes) -> None:
        self._check_alive()
        since = time.time()
        try:
            ok = await self.host.call(
                self.host.client.api.put_archive,
                self.container_id,
                path,
                tar,
                what=f"writing files into {path}",
            )
        except (DockerException, SandboxError, OSError) as err:
            raise await self._blame(err, f"writing files into {path}", since) from err
        if not ok:
            raise await self._blame(
                RuntimeError(f"the engine refused to extract into {path}"),
                f"writing files into {path}",
                since,
            )
        self.stats.bytes_written += len(tar)

    def _check_alive(self) -> None:
        """Isolated operations work after the episode ended on a limit (the verifier still
        runs); only a closed sandbox or an infrastructure failure stops them."""
        if self._closed or self.container_id is None:
            raise SandboxClosed(f"task {self.task.id}: the sandbox is closed")
        if self._storage_hit is not None:
            raise self._storage_hit  # removed: nothing left to run in
        if self._failed is not None and self._failed.infra:
            raise self._failed

    async def _note_oom(self, result: CommandResult, since: float) -> CommandResult:
        """The command's result with a notice when the OOM killer took part. A SIGKILLed
        command (137) waits up to `OOM_EVENT_WAIT_S` for the engine's `oom` event, which
        can arrive after the command's exit (1 of 4 runs of the memory-hog test missed it here)."""
        waited = 0.0
        while not await self._oom_since(since):
            if result.exit_code != 137 or waited >= OOM_EVENT_WAIT_S:
                return result
            await asyncio.sleep(0.2)
            waited += 0.2
        self.stats.extra["oom_kills"] = self.stats.extra.get("oom_kills", 0) + 1
        notice = (
            f"\n[tbrl: killed by the out-of-memory killer: the task's memory limit is "
            f"{self.task.limits.memory_mb} MB]"
        )
        return CommandResult(
            result.exit_code,
            result.output + notice,
            result.timed_out,
            result.truncated_bytes,
            result.duration_s,
        )

    async def _check_pids(self, margin: float = 0.0) -> None:
        """Raise `pids` when the container's process count is at its limit (within `margin`).

        Called before a timed-out command is killed, every few seconds during a long
        command, and (with a 20 % margin) after output that shows a failed fork."""

        def read_stats() -> dict:
            api = self.host.client.api
            try:
                return api.stats(self.container_id, stream=False, one_shot=True)
            except InvalidVersion:  # daemons before API 1.41 sample twice (about 1 s)
                return api.stats(self.container_id, stream=False)

        stats = await self.host.call(read_stats, what="reading pids")
        pids = stats.get("pids_stats") or {}
        current, limit = pids.get("current", 0), pids.get("limit") or self.task.limits.pids
        if current >= min(limit - PIDS_NEAR_LIMIT, limit * (1 - margin)):
            raise SandboxLimitExceeded(
                "pids",
                f"task {self.task.id}: process limit reached ({current}/{limit} pids; "
                "a fork bomb or runaway spawning) - the rollout is ended",
                limit=limit,
                used=current,
                unit="pids",
            )


def _log_late_failure(future: asyncio.Future) -> None:
    """The reap nobody waits for any more: log its failure instead of losing it."""
    if not future.cancelled() and future.exception() is not None:
        log.warning("tbrl: background reap failed: %s", future.exception())
