"""The verifier: run a task's tests in its container *after* the episode, with a runtime the
agent cannot have altered, and score them with the task's weights.

    report = await verify(task, sandbox, timeout=None)   # -> TestReport (score in [0, 1])

How it resists an agent that spent the whole episode as root in the container:

| attack | blocked by |
|---|---|
| `conftest.py` that marks every test passed | `--noconftest`; rootdir is a private random dir |
| fake `pytest` / `python` earlier on PATH, shell rc aliases/functions | nothing is looked up on PATH or run by the agent's shell: a fresh `docker exec` (root, explicit env) starts the verifier's own loader + interpreter by absolute path |
| `sitecustomize.py`, `usercustomize.py`, `.pth` injection | `-I -S`; container site-packages are appended *after* the runtime's own paths, `.pth` path lines only (never `import` lines) |
| patched stdlib / pytest / pluggy in the container | the runtime brings its own stdlib and pytest, loaded first; common stdlib modules are pinned before tests import anything |
| printing fake `PASSED` lines | results come from JUnit XML, never from console text |
| pre-created results file or dir; background process rewriting results | JUnit XML goes into a pipe inside the runner process (no file to rewrite); the report is a framed line on the exec's own stdout with a per-run marker |
| background process rewriting the test files | pytest runs a private copy; its hash before run and after collection must equal the pristine hash |
| killing or stopping the runner | no report, or the host-side deadline (the exec stream is read in a thread) => every test failed (score 0), never `infra_error` |
| `/tests` made unwritable, a file, or a symlink | the container's `/tests` is renamed aside and a fresh copy placed; the private copy is what runs |
| `/etc/ld.so.preload` | overwritten with an empty file through the Docker API before the run |
| `/logs/verifier/reward.txt` pre-written (script tasks) | `/logs/verifier` is moved aside and recreated before `test.sh` runs |

Found while building the suite (reported to the sandbox owner): a process that SIGSTOPs
`runc init` wedges the Docker daemon for that container (`docker kill`/`rm` hang until it
is SIGKILLed from the host); the hacking suite's stop attack spares `runc` for that reason.

Not blocked (documented limits): code the tests themselves import from the agent's work runs
inside the test process and could tamper with pytest in memory; a third-party library the
tests import from the container's site-packages (e.g. numpy) may have been modified; a
background process racing the ~100 ms between copying the runtime in and starting it.
Script-only (Harbor `test.sh`) tasks use the runtime's bash and an isolated `pytest`
function, but the script's other tools come from the container.

`infra_error` is set only when the Docker engine or the container fails — never for anything
the agent can cause, or training would learn to crash the verifier to escape a 0.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import secrets
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from tbrl_lib.rewards import runtime
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.weights import (
    function_key,
    function_outcomes,
    outcomes_from_junit_xml,
    weighted_score,
)

TESTS_DST = "/tests"
LOGS_DIR = "/logs/verifier"
SITE_DIRS = ["/usr/local/lib/python3.13/dist-packages", "/usr/local/lib/python3.13/site-packages",
             "/usr/lib/python3/dist-packages", "/usr/lib/python3.13/site-packages"]
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root", "LANG": "C.UTF-8", "LD_PRELOAD": "", "LD_LIBRARY_PATH": "",
            "BASH_ENV": "", "ENV": "", "PYTHONPATH": "", "PYTHONHOME": ""}
MAX_STDOUT = 32 * 1024 * 1024


@dataclass
class TestReport:
    """What the verifier found. `score` is always a finite number in [0, 1]."""

    __test__ = False  # not a pytest class

    score: float
    outcomes: dict[str, bool] = field(default_factory=dict)
    """Per test function (`test_x`, `Class::test_x`): passed or not."""
    missing: list[str] = field(default_factory=list)
    """Expected tests with no result (count as failed)."""
    unexpected: list[str] = field(default_factory=list)
    mode: str = "pytest"
    timed_out: bool = False
    infra_error: bool = False
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    console_tail: str = ""

    @property
    def passed(self) -> int:
        return sum(self.outcomes.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class VerifierSetupError(RuntimeError):
    """The verifier cannot reach the container (not a Docker-backed sandbox)."""


def container_of(sandbox: Any):
    """The docker SDK `Container` behind a sandbox.

    Accepts `sandbox.container` (a docker `Container`) or the `DockerSandbox` shape
    (`sandbox.host.client` + `sandbox.container_id`).
    """
    container = getattr(sandbox, "container", None)
    if container is not None and hasattr(container, "put_archive"):
        return container
    host, cid = getattr(sandbox, "host", None), getattr(sandbox, "container_id", None)
    if host is not None and cid:
        return host.client.containers.get(cid)
    raise VerifierSetupError(
        f"{type(sandbox).__name__} exposes neither a docker `container` nor `host.client` + "
        "`container_id`; the verifier needs the container itself (not the agent's shell) "
        "to run tests in isolation"
    )


async def verify(task: Task, sandbox: Any, timeout: float | None = None) -> TestReport:
    """Run `task`'s tests in `sandbox`'s container and score them (see module docstring)."""
    limit = float(timeout or task.limits.test_timeout_sec)
    started = time.monotonic()
    try:
        container = await asyncio.to_thread(container_of, sandbox)
        report = await asyncio.to_thread(_verify_blocking, task, container, limit)
    except VerifierSetupError:
        raise
    except Exception as exc:
        report = await asyncio.to_thread(_classify_failure, sandbox, exc)
    report.duration_s = time.monotonic() - started
    return report


def _classify_failure(sandbox: Any, exc: Exception) -> TestReport:
    """An exec that failed while the container still runs is the agent's doing (it can kill
    `runc init` or the runner): score 0. Only a dead engine or container is `infra_error`."""
    try:
        container = container_of(sandbox)
        container.reload()
        alive = container.status == "running"
    except Exception:
        alive = False
    if alive:
        return TestReport(score=0.0, error=f"the test run failed inside a running container "
                          f"({exc!r}); every test counts as failed")
    return TestReport(score=0.0, infra_error=True, error=f"verifier infrastructure: {exc!r}")


def _payload(task: Task, root: str, marker: str, limit: float, workdir: str) -> dict[str, bytes]:
    tests = task.tests
    files = {f"tests/{rel}": text.encode() for rel, text in tests.files.items()}
    mode = "pytest" if tests.pytest else "script"
    if tests.pytest:
        files["tests/test_outputs.py"] = tests.pytest.encode()
    if tests.script:
        files["tests/test.sh"] = tests.script.encode()
    if tests.weights:
        files["tests/test_weights.json"] = json.dumps(tests.weights).encode()
    config = {"root": root, "marker": marker, "mode": mode, "timeout_s": limit,
              "test_files": ["test_outputs.py"], "tests_dst": TESTS_DST, "logs_dir": LOGS_DIR,
              "workdir": workdir, "site_dirs": SITE_DIRS}
    runner = resources.files("tbrl_lib.rewards").joinpath("verifier_runner.py").read_bytes()
    files.update({
        "run": runner,
        "config.json": json.dumps(config).encode(),
        "cli.json": json.dumps({**config, "cli": True}).encode(),
        "pytest.ini": b"[pytest]\n",
    })
    return files


def expected_tree_hash(files: dict[str, bytes], prefix: str = "tests/") -> str:
    """The runner's `tree_hash` of the tests directory, computed from what we sent."""
    by_dir: dict[str, list[tuple[str, bytes]]] = {}
    for rel, content in files.items():
        if rel.startswith(prefix):
            sub = rel[len(prefix):]
            d, _, name = sub.rpartition("/")
            by_dir.setdefault("/" + d if d else "", []).append((name, content))
    digest = hashlib.sha256()
    for d in sorted(by_dir):
        for name, content in sorted(by_dir[d]):
            digest.update(f"{d}/{name}".encode())
            digest.update(content)
    return digest.hexdigest()


def _verify_blocking(task: Task, container, limit: float) -> TestReport:
    import docker

    container.reload()
    if container.status != "running":
        raise RuntimeError(f"container {container.short_id} is {container.status}, not running")
    client = container.client
    root = "/.tbrl-v-" + secrets.token_hex(8)
    marker = "TBRL-REPORT-" + secrets.token_hex(16)
    workdir = container.attrs.get("Config", {}).get("WorkingDir") or "/app"
    files = _payload(task, root, marker, limit, workdir)
    if not container.put_archive("/", runtime.directory_tar(root[1:])):
        raise RuntimeError(f"could not create {root} in the container")
    container.put_archive(root, runtime.runtime_tar(client))
    container.put_archive(root, runtime.files_tar(files))
    notes = []
    try:
        container.put_archive("/etc", runtime.files_tar({"ld.so.preload": b""}, mode=0o644))
    except docker.errors.APIError as exc:
        notes.append(f"could not neutralise /etc/ld.so.preload ({exc.explanation}); scoring 0")
        return TestReport(score=0.0, error="tampered: /etc/ld.so.preload cannot be replaced",
                          notes=notes, mode="pytest" if task.tests.pytest else "script")
    rt = root + "/rt"
    argv = [rt + "/lib/ld.so", "--inhibit-cache", "--library-path", rt + "/lib",
            rt + "/usr/bin/interp", "-I", "-S", "-B", root + "/run", root + "/config.json"]
    env = {**BASE_ENV}
    grace = min(15.0, max(3.0, limit / 4))  # the runner's own alarm fires first when it can
    _exit_code, stdout, stderr, host_timeout = _exec(container, argv, env, limit + grace)
    if host_timeout:
        _kill_runner(container, rt, root)
    _cleanup(container, rt, root)
    report = _score(task, stdout, marker, expected_tree_hash(files))
    report.notes = notes + report.notes
    report.timed_out = report.timed_out or host_timeout
    console = stdout.decode(errors="replace")
    console = console[: console.rfind(marker)] if marker in console else console
    report.console_tail = console[-4000:] + stderr.decode(errors="replace")[-2000:]
    return report


def _exec(container, argv, env, timeout_s) -> tuple[int | None, bytes, bytes, bool]:
    """One `docker exec` as root; the stream is read in a thread so a stopped or hung runner
    cannot hold the verifier past `timeout_s` (the docker SDK's exec stream has no timeout)."""
    import threading

    import docker

    api = docker.APIClient(base_url=_engine_url(container.client.api), timeout=int(timeout_s) + 5)
    exec_id = api.exec_create(container.id, argv, environment=env, workdir="/", user="0:0",
                              stdout=True, stderr=True)["Id"]
    out, err = bytearray(), bytearray()
    state: dict[str, Any] = {}

    def read() -> None:
        try:
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                if chunk_out:
                    out.extend(chunk_out)
                    if len(out) > MAX_STDOUT:
                        del out[: len(out) - MAX_STDOUT]
                if chunk_err and len(err) < 256 * 1024:
                    err.extend(chunk_err)
            state["exit"] = api.exec_inspect(exec_id).get("ExitCode")
        except Exception as exc:  # surfaced below unless we already timed out
            state["error"] = exc

    reader = threading.Thread(target=read, name="tbrl-verify-exec", daemon=True)
    reader.start()
    reader.join(timeout_s)
    if reader.is_alive():  # left to end when the container goes; its socket holds no lock
        return None, bytes(out), bytes(err), True
    api.close()
    if "error" in state:
        raise RuntimeError(f"the test exec failed: {state['error']!r}")
    return state.get("exit"), bytes(out), bytes(err), False


def _engine_url(api) -> str:
    """The URL to open a second client on the same engine (the SDK rewrites unix URLs)."""
    adapter = getattr(api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    if api.base_url.startswith("http+docker://") and socket_path:
        return "unix://" + socket_path
    return api.base_url


_KILL = ("import os,signal\n"
         "for p in os.listdir('/proc'):\n"
         "  try:\n"
         "    if p.isdigit() and int(p)!=os.getpid() and {root!r}.encode() in open('/proc/'+p+'/cmdline','rb').read():\n"
         "      os.kill(int(p), signal.SIGKILL)\n"
         "  except OSError: pass\n")


def _kill_runner(container, rt: str, root: str) -> None:
    argv = [rt + "/lib/ld.so", "--library-path", rt + "/lib", rt + "/usr/bin/interp", "-I", "-S",
            "-c", _KILL.format(root=root)]
    container.exec_run(argv, user="0:0", environment=BASE_ENV, detach=True)


def _cleanup(container, rt: str, root: str) -> None:
    argv = [rt + "/lib/ld.so", "--library-path", rt + "/lib", rt + "/usr/bin/interp", "-I", "-S",
            "-c", f"import shutil; shutil.rmtree({root!r}, ignore_errors=True)"]
    container.exec_run(argv, user="0:0", environment=BASE_ENV, detach=True)


def _frame(stdout: bytes, marker: str) -> dict | None:
    text = stdout.decode(errors="replace")
    at = text.rfind(marker + " ")
    if at < 0:
        return None
    blob = text[at + len(marker) + 1:].split("\n", 1)[0].strip()
    try:
        return json.loads(base64.b64decode(blob, validate=True))
    except (ValueError, json.JSONDecodeError):
        return None


def _score(task: Task, stdout: bytes, marker: str, pristine_hash: str) -> TestReport:
    frame = _frame(stdout, marker)
    mode = "pytest" if task.tests.pytest else "script"
    if frame is None:
        return TestReport(score=0.0, mode=mode, error="the test runner produced no report "
                          "(killed, stopped, crashed or out of time); every test counts as failed")
    report = TestReport(score=0.0, mode=mode, timed_out=bool(frame.get("timed_out")),
                        notes=list(frame.get("notes", [])))
    hashes = {frame.get("hash_before"), frame.get("hash_after") or frame.get("hash_before")}
    if hashes != {pristine_hash}:
        report.error = "the test files changed during verification; scoring 0"
        return report
    if mode == "script":
        report.score = _reward_from_files(frame.get("reward_files") or {})
        if not frame.get("reward_files"):
            report.error = f"test.sh wrote neither {LOGS_DIR}/reward.txt nor reward.json"
        return report
    raw: dict[str, bool] = {}
    if frame.get("junit"):
        try:
            raw = outcomes_from_junit_xml(frame["junit"])
        except Exception as exc:  # malformed XML from a crashed run
            report.error = f"unreadable JUnit report: {exc}"
    elif report.timed_out:
        raw = {k: bool(v) for k, v in frame.get("outcomes", {}).items()}
        report.error = "tests timed out; tests that finished keep their result"
    merged = function_outcomes(raw)
    expected = [function_key(n) for n in task.tests.test_names()]
    report.outcomes = {name: merged.get(name, False) for name in expected}
    report.missing = [name for name in expected if name not in merged]
    report.unexpected = sorted(set(merged) - set(expected))
    report.score = _finite(weighted_score(task.tests, raw))
    return report


def _reward_from_files(files: dict[str, str]) -> float:
    if "reward.txt" in files:
        try:
            return _finite(float(files["reward.txt"].strip().split()[0]))
        except (ValueError, IndexError):
            return 0.0
    try:
        data = json.loads(files.get("reward.json", ""))
    except json.JSONDecodeError:
        return 0.0
    if isinstance(data, dict):
        data = data.get("reward", next((v for v in data.values() if isinstance(v, (int, float))), 0))
    return _finite(data) if isinstance(data, (int, float)) else 0.0


def _finite(value: Any) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else max(0.0, min(1.0, value))


