"""The verifier: run a task's tests in its container *after* the episode, with a runtime the
agent cannot have altered, and score them with the task's weights.

    report = await verify(task, sandbox, timeout=None)   # -> TestReport (score in [0, 1])

It works through the `Sandbox` protocol only (`put_archive`, `exec_isolated`, and the
runtime mounted read-only at `sandbox.runtime_dir`); nothing here knows Docker.

How it resists an agent that spent the whole episode as root in the container:

| attack | blocked by |
|---|---|
| `conftest.py` that marks every test passed | `--noconftest`; rootdir is a private random dir |
| fake `pytest` / `python` earlier on PATH, shell rc aliases/functions | nothing is looked up on PATH or run by the agent's shell: a fresh exec (root, explicit env) starts the runtime's own loader + interpreter by absolute path, from a read-only mount |
| `sitecustomize.py`, `usercustomize.py`, `.pth` injection | `-I -S`; container site-packages are appended *after* the runtime's own paths, `.pth` path lines only (never `import` lines) |
| patched stdlib / pytest / pluggy in the container | the runtime brings its own stdlib and pytest, loaded first |
| a stdlib name shadowed from the work directory (`/app/statistics.py` after the test's `sys.path.insert(0, "/app")`) | top-level names the stdlib directory holds are served from it whatever `sys.path` says (`sandbox.stdlib_first`: no list of names, the directory is the list), in the runner and, through the image's `sitecustomize`, in every image `python3` the tests start |
| printing fake `PASSED` lines | results come from JUnit XML, never from console text |
| pre-created results file or dir; background process rewriting results | JUnit XML goes into a pipe inside the runner process (no file to rewrite); the report is a framed line on the exec's own stdout with a per-run marker, passed in the runner's environment, which it makes unreadable (non-dumpable) before anything else |
| replacing the verifier's runtime or runner | the runtime is a read-only volume mount the agent cannot write, move or unmount (no CAP_SYS_ADMIN); the runner's source travels on its command line, never as a file |
| background process rewriting the test files | pytest runs a private copy; its hash before run and after collection must equal the pristine hash |
| killing or stopping the runner | no report, or the host-side deadline (the exec stream is read in a thread) => every test failed (score 0), never `infra_error` |
| `/tests` made unwritable, a file, or a symlink | the container's `/tests` is renamed aside and a fresh copy placed; the private copy is what runs |
| `/etc/ld.so.preload` | overwritten with an empty file through the Docker API before the run |
| `/logs/verifier/reward.txt` pre-written (script tasks) | `/logs/verifier` is moved aside and recreated before `test.sh` runs |
| a patched third-party library (numpy's `assert_allclose` made a no-op) | the image's own site-packages, from a read-only volume copied from the *image* (`sandbox.pristine_volume`), come before the container's |
| a shadowing copy of a library (workdir, `.pth` path line, other site dir) | the pristine site dirs come first; the workdir is not on `sys.path` |
| wrapped tools (`python3` that writes reward 1 for anything under /tests; `jq`, `curl` ...) | the tests' and `test.sh`'s PATH starts with the image's pristine tool dirs; the pristine `python3` finds the image's stdlib and packages next to itself, then the agent's *new* packages |
| a replaced program reached by absolute path or a shebang (`/usr/bin/python3 /tests/check.py`, `#!/usr/bin/env python3`) | before the tests, every entry of the image's PATH dirs whose inode + ctime differ from the image's manifest is restored from the pristine copy (`sandbox.pristine_programs`; ctime cannot be set back without CAP_SYS_TIME); new entries stay |
| `.pth` `import` lines or shadowing packages under a `python3` started by absolute path | the image's interpreters are pointed at their pristine copies, which import the image's stdlib and packages and none of the container's `.pth` files |
| a background process re-planting a program after the restore | every entry's identity as the tests start is compared after them (and at the alarm): any change scores 0 |
| `/pytest.ini` above `/tests` (`addopts = --collect-only`) for a `python3 -m pytest` in test.sh | `PYTEST_ADDOPTS` names the ini (the tests' own, or an empty one) and the rootdir |
| an output symlinked to the tests' expected file (`/app/out -> /tests/expected.json`) | links under the workdir that resolve into the tests are moved aside before the tests are placed |
| killing everything (`kill -9 -1`, its own shell too), a removed `bash`, pids exhaustion, hung commands | init ignores signals from inside, the shell restarts (or the episode ends `sandbox_broken`), the verifier is started by the engine: scored, never `infra_error` |

Found while building the suite (reported to the sandbox owner): a process that SIGSTOPs
`runc init` wedges the Docker daemon for that container (`docker kill`/`rm` hang until it
is SIGKILLed from the host); the hacking suite's stop attack spares `runc` for that reason.

Not blocked (what remains, and why):
- Code the tests import from the agent's work (the module under test) runs inside the test
  process and can tamper with pytest in memory: that is what such a task tests, so it must
  be imported from the container.
- Packages the agent installed *new*, or upgraded past the image's version, come from the
  container (tests of "install X" tasks must see them); an upgrade is shadowed by the image's
  version, which is the one a test gets.
- Shared libraries and the loader: pristine programs are the image's binaries but run with
  the container's `/lib64/ld-linux*.so` and `.so` files (libc, libssl, a shared libpython);
  `/etc/ld.so.preload` is emptied, a replaced library is not detected (closing it means
  copying the lib dirs too and running every tool through the pristine loader).
- Programs outside the image's PATH directories (`/opt/tool/bin/x`, `/usr/lib/git-core/...`)
  and data files the image's programs read (`/etc`, `/usr/share`) are the container's: the
  pristine set is the PATH dirs and the Python lib dirs, what tests call by name.
- Processes in a private view: the sandbox cannot have one (no CAP_SYS_ADMIN, and Docker's
  seccomp profile refuses `mount` and `unshare` in it; `docker exec --privileged` does not
  start here, "unable to apply caps"), so the image's programs are restored *in place*. A
  test that rewrites one of them itself (reinstalls a program the image has) is scored 0,
  like an agent process doing so during the run. Verification leaves the image's
  interpreters pointing at their pristine copies (a sandbox is verified last).
- PATH directories moved away and back during the tests on an overlayfs with
  `redirect_dir=on` (directories are compared by inode; see `sandbox.pristine_programs`).
- State the tests read is the agent's: files, git repositories, databases, services it
  started (a service that answers "ok" to the checker is the agent's work, as in any end-state
  test). Answers cached in the image (a solution left in git history) are a task-authoring
  bug no verifier can undo.
- `python3 -m pytest` from a `test.sh` is the image's pytest run normally (not the isolated
  `pytest` function): `PYTEST_ADDOPTS` pins its ini file (the tests' own or an empty one) and
  rootdir, plugins do not autoload, but its imports follow the pristine-then-container rule.
- A background process that ptrace-attaches to the runner in the few milliseconds before it
  turns non-dumpable.
- A process that SIGSTOPs `runc init` wedges the engine for that container (found while
  building the suite: `docker kill`/`rm` hang until runc is SIGKILLed from the host). The
  verifier's deadline should still score it 0, but the container leaks and the rollout waits
  on the engine's API timeout; untested (the suite's stop attack spares `runc`), not fixed.

Trade-off (what a task can no longer test): a task whose job is to fix, *in place*, a program
or package its image installed in a PATH directory or site-packages (a broken
`/usr/local/bin/tool`, a bug in a site-packages module) is tested against the image's copy,
by name, by absolute path and by import. Decision: no per-task opt-out (a switch that reopens
the gap for that task's tests); such a task installs its program outside the PATH dirs and
links it into PATH (`/opt/tool/bin/tool`, `ln -s` into `/usr/local/bin`: the link is the
image's and stays, its target is the agent's work), and its package outside site-packages
(on the tests' `sys.path` explicitly). Likewise a module of the agent's named like a stdlib
module (`/app/calendar.py`) is not what `import calendar` gives a test. None of the 42
bundled tasks needs either (nor imports such a module, nor does any upstream test); in the upstream
CSV one test reads an image script the agent may have "enhanced" in place
(`/usr/local/bin/scan-webhooks`, one of several accepted answers of `draft_dp_375818ef`),
and tests that name site-packages import a tool's dependency (scapy), which is what the
pristine copy protects.

`infra_error` is set only when the sandbox says the infrastructure failed
(`SandboxError.infra`: the engine unreachable, the container gone or stopped from outside)
or the runner finds the pristine mount without its manifest (a volume removed or emptied
after the sandbox checked it: the programs cannot be restored, so no tests run)
— never for anything the agent can cause, or training would learn to crash the verifier to
escape a 0. Any other exception is a bug and propagates.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import secrets
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from tbrl_lib.sandbox.archive import tar_of
from tbrl_lib.sandbox.base import IsolatedCommand, Sandbox, SandboxError
from tbrl_lib.sandbox.runtime import interpreter_argv
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.weights import (
    function_key,
    function_outcomes,
    outcomes_from_junit_xml,
    weighted_score,
)

TESTS_DST = "/tests"
LOGS_DIR = "/logs/verifier"
SITE_DIRS = [
    "/usr/local/lib/python3.13/dist-packages",
    "/usr/local/lib/python3.13/site-packages",
    "/usr/lib/python3/dist-packages",
    "/usr/lib/python3.13/site-packages",
]
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "LD_PRELOAD": "",
    "LD_LIBRARY_PATH": "",
    "BASH_ENV": "",
    "ENV": "",
    "PYTHONPATH": "",
    "PYTHONHOME": "",
}


RUNNER_MODULES = ("tbrl_lib.sandbox.stdlib_first", "tbrl_lib.sandbox.pristine_programs")
"""Standard-library-only modules the runner imports; their source travels in the bootstrap."""
LOADER = """\
import base64, sys, types
for name in ("tbrl_lib", "tbrl_lib.sandbox"):
    sys.modules[name] = types.ModuleType(name)
    sys.modules[name].__path__ = []
for name, blob in MODULES:
    module = sys.modules[name] = types.ModuleType(name)
    exec(compile(base64.b64decode(blob), name, "exec"), module.__dict__)
exec(compile(base64.b64decode(RUNNER), "tbrl-verifier-runner", "exec"))
"""


def _bootstrap() -> str:
    """A `-c` program that registers `RUNNER_MODULES` and runs the runner (everything
    base64-encoded, so the program holds no single quote and fits a shell word)."""

    def blob(package: str, name: str) -> str:
        return base64.b64encode(resources.files(package).joinpath(name).read_bytes()).decode()

    modules = [
        (m, blob(m.rpartition(".")[0], m.rpartition(".")[2] + ".py")) for m in RUNNER_MODULES
    ]
    loader = f"MODULES = {modules!r}\nRUNNER = {blob('tbrl_lib.rewards', 'verifier_runner.py')!r}\n"
    program = base64.b64encode((loader + LOADER).encode()).decode()
    return f'import base64;exec(compile(base64.b64decode("{program}"),"tbrl-verifier-boot","exec"))'


BOOT = _bootstrap()


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


async def verify(task: Task, sandbox: Sandbox, timeout: float | None = None) -> TestReport:
    """Run `task`'s tests in `sandbox`'s container and score them (see module docstring)."""
    limit = float(timeout or task.limits.test_timeout_sec)
    started = time.monotonic()
    mode = "pytest" if task.tests.pytest else "script"
    root = "/.tbrl-v-" + secrets.token_hex(8)
    marker = "TBRL-REPORT-" + secrets.token_hex(16)
    files = _payload(task)
    config = {
        "root": root,
        "rt": sandbox.runtime_dir + "/rt",
        "marker": marker,
        "boot": BOOT,
        "mode": mode,
        "timeout_s": limit,
        "test_files": ["test_outputs.py"],
        "tests_dst": TESTS_DST,
        "logs_dir": LOGS_DIR,
        "workdir": sandbox.workdir,
        "site_dirs": SITE_DIRS,
        "pristine": getattr(sandbox, "pristine_dir", None),
    }
    placed = {root[1:] + "/" + rel: data for rel, data in files.items()}
    placed["etc/ld.so.preload"] = b""  # neutralised before the run (read by every loader)
    try:
        await sandbox.put_archive(
            "/",
            tar_of(
                placed,
                dir_mode=0o700,
                file_mode=0o600,
                modes={"etc/ld.so.preload": 0o644},
                existing_dirs={"etc"},
            ),
        )
        grace = min(15.0, max(3.0, limit / 4))  # the runner's own alarm fires first when it can
        result = await sandbox.exec_isolated(
            IsolatedCommand(
                [*interpreter_argv(sandbox.runtime_dir), "-I", "-S", "-B", "-c", BOOT],
                env={**BASE_ENV, "TBRL_VERIFY": json.dumps(config)},
                timeout=limit + grace,
            )
        )
    except SandboxError as err:
        report = TestReport(
            score=0.0,
            mode=mode,
            infra_error=err.infra,
            error=(
                f"verifier infrastructure: {err}"
                if err.infra
                else f"the tests could not run in the container ({err}); every test "
                "counts as failed"
            ),
        )
        report.duration_s = time.monotonic() - started
        return report
    report = _score(task, result.stdout, marker, expected_tree_hash(files))
    report.timed_out = report.timed_out or result.timed_out
    console = result.stdout.decode(errors="replace")
    console = console[: console.rfind(marker)] if marker in console else console
    report.console_tail = console[-4000:] + result.stderr.decode(errors="replace")[-2000:]
    report.duration_s = time.monotonic() - started
    return report


def _payload(task: Task) -> dict[str, bytes]:
    """The files the runner needs, relative to its private directory."""
    tests = task.tests
    files = {f"tests/{rel}": text.encode() for rel, text in tests.files.items()}
    if tests.pytest:
        files["tests/test_outputs.py"] = tests.pytest.encode()
    if tests.script:
        files["tests/test.sh"] = tests.script.encode()
    if tests.weights:
        files["tests/test_weights.json"] = json.dumps(tests.weights).encode()
    files["pytest.ini"] = b"[pytest]\n"
    return files


def expected_tree_hash(files: dict[str, bytes], prefix: str = "tests/") -> str:
    """The runner's `tree_hash` of the tests directory, computed from what we sent."""
    by_dir: dict[str, list[tuple[str, bytes]]] = {}
    for rel, content in files.items():
        if rel.startswith(prefix):
            sub = rel[len(prefix) :]
            d, _, name = sub.rpartition("/")
            by_dir.setdefault("/" + d if d else "", []).append((name, content))
    digest = hashlib.sha256()
    for d in sorted(by_dir):
        for name, content in sorted(by_dir[d]):
            digest.update(f"{d}/{name}".encode())
            digest.update(content)
    return digest.hexdigest()


def _frame(stdout: bytes, marker: str) -> dict | None:
    text = stdout.decode(errors="replace")
    at = text.rfind(marker + " ")
    if at < 0:
        return None
    blob = text[at + len(marker) + 1 :].split("\n", 1)[0].strip()
    try:
        return json.loads(base64.b64decode(blob, validate=True))
    except (ValueError, json.JSONDecodeError):
        return None


def _score(task: Task, stdout: bytes, marker: str, pristine_hash: str) -> TestReport:
    frame = _frame(stdout, marker)
    mode = "pytest" if task.tests.pytest else "script"
    if frame is None:
        return TestReport(
            score=0.0,
            mode=mode,
            error="the test runner produced no report "
            "(killed, stopped, crashed or out of time); every test counts as failed",
        )
    if frame.get("infra"):  # the runner found the infrastructure broken (no tests ran)
        return TestReport(
            score=0.0,
            mode=mode,
            infra_error=True,
            error=f"verifier infrastructure: {frame['infra']}",
        )
    report = TestReport(
        score=0.0,
        mode=mode,
        timed_out=bool(frame.get("timed_out")),
        notes=list(frame.get("notes", [])),
    )
    hashes = {frame.get("hash_before"), frame.get("hash_after") or frame.get("hash_before")}
    if hashes != {pristine_hash}:
        report.error = "the test files changed during verification; scoring 0"
        return report
    if frame.get("programs"):
        report.error = (
            "the image's programs could not be given to the tests as the image has them ("
            + "; ".join(frame["programs"])[:500]
            + "); scoring 0"
        )
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
        data = data.get(
            "reward", next((v for v in data.values() if isinstance(v, (int, float))), 0)
        )
    return _finite(data) if isinstance(data, (int, float)) else 0.0


def _finite(value: Any) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else max(0.0, min(1.0, value))
