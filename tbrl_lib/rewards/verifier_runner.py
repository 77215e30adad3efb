"""In-container test runner, executed by the verifier's own runtime (see
`tbrl_lib.sandbox.backends.docker.runtime_volume`).

Standard library only. It is never written into the container: the verifier passes its
source on the command line of the runtime's interpreter
(`/.tbrl-rt/rt/lib/ld.so ... interp -I -S -B -c <bootstrap>`) and its settings in the
`TBRL_VERIFY` environment variable; the test files wait in a fresh root-only directory.
It never imports anything from the container before the tests themselves do: the two tbrl
modules it imports (`sandbox.stdlib_first`, `sandbox.pristine_programs`, standard library
only) travel in the same bootstrap (`verifier.RUNNER_MODULES`).

What it does, in order:
1. makes itself non-dumpable (other processes of the container, which lack CAP_SYS_PTRACE,
   can no longer read its environment, open its file descriptors or attach to it) and
   becomes its own process group (so everything it started can be killed);
2. builds `sys.path`: its own stdlib and pytest first, then the image's pristine
   site-packages (`sandbox.pristine_volume`, read-only), then the container's (packages the
   agent added; path lines of `.pth` files only; `import` lines, `sitecustomize` and
   `usercustomize` are never executed); serves stdlib names from its own stdlib whatever
   `sys.path` the tests set up (`stdlib_first`) and blocks pytest's optional imports
   (pygments, colorama, ...) so nothing planted can load first; puts the image's pristine
   PATH directories before the container's (tests' subprocesses and `test.sh` find the
   image's programs first, and `python3` is the image's, with its own stdlib and packages,
   then the agent's new packages);
3. moves an existing `/tests` (file, dir or symlink) aside and copies the pristine tests in;
   pytest itself runs the verifier's *private* copy, hashed before and after collection;
   restores the image's programs the agent changed in the PATH directories and points the
   image's interpreters at their pristine copies (`pristine_programs`), so absolute paths
   and shebangs reach the image's programs too; a pristine mount without its manifest
   stops the run before the tests with an `infra` report (the verifier's `infra_error`);
4. runs pytest in-process with no conftest, no plugins, no cache, an empty ini file, an
   explicit rootdir and JUnit XML written into a pipe (never a file anyone can rewrite);
   or, for script-only tasks, runs `tests/test.sh` with the runtime's bash and reads
   `/logs/verifier/reward.txt|json` (after clearing that directory);
5. checks that none of the image's programs changed while the tests ran, removes its
   directory and prints one line `<frame-marker> <base64 JSON>` on a duplicate of the
   original stdout.
An alarm emits a partial report (the outcomes seen so far) when the time limit is hit.
"""

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading

from tbrl_lib.sandbox.pristine_programs import MANIFEST, changed, load, restore
from tbrl_lib.sandbox.stdlib_first import install

CLI_MODE = len(sys.argv) > 1 and sys.argv[1] == "cli"
CONFIG = json.loads(os.environ.pop("TBRL_VERIFY_CLI" if CLI_MODE else "TBRL_VERIFY"))
ROOT = CONFIG["root"]
RT = CONFIG["rt"]
REPORT_FD = os.dup(1)
STATE = {"outcomes": {}, "hash_before": None, "hash_after": None, "notes": [], "programs": []}
"""What the report carries; `programs` lists what went wrong with the image's programs (could
not be restored, or changed while the tests ran): the verifier scores 0 unless it is empty."""
BASELINE = {}
"""Identity of each of the image's programs as the tests start (`pristine_programs.restore`)."""
BLOCKED = ("pygments", "colorama", "argcomplete", "exceptiongroup", "tomli", "xdist")


def emit(extra):
    payload = dict(STATE, **extra)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    line = (
        "\n"
        + CONFIG["marker"]
        + " "
        + base64.b64encode(json.dumps(payload).encode()).decode()
        + "\n"
    )
    os.write(REPORT_FD, line.encode())


def on_alarm(signum, frame):
    check_programs()
    emit({"timed_out": True, "junit": None})
    remove_root()
    os.killpg(0, signal.SIGKILL)


def tree_hash(path):
    digest = hashlib.sha256()
    for base, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(base, name)
            digest.update(full[len(path) :].encode())
            with open(full, "rb") as fh:
                digest.update(fh.read())
    return digest.hexdigest()


def site_dirs(prefix=""):
    """The site directories under `prefix` ("" = the container's; the pristine mount = the
    image's), each followed by the path lines of its `.pth` files (absolute lines resolved
    under `prefix` first)."""
    dirs = []
    for d in CONFIG["site_dirs"]:
        d = prefix + d
        if os.path.isdir(d) and not os.path.islink(d):
            dirs.append(d)
            for name in sorted(os.listdir(d)):
                if not name.endswith(".pth"):
                    continue
                try:
                    lines = open(os.path.join(d, name), encoding="utf-8").read().splitlines()
                except (OSError, UnicodeDecodeError):
                    continue
                for line in lines:
                    line = line.strip()
                    if line and not line.startswith(("#", "import ", "import\t")):
                        full = os.path.normpath(os.path.join(d, line))
                        if prefix and line.startswith("/") and os.path.isdir(prefix + full):
                            full = prefix + full
                        if os.path.isdir(full):
                            dirs.append(full)
    return dirs


def no_dumping():
    """PR_SET_DUMPABLE=0: /proc/<pid>/environ, fd/ and ptrace need CAP_SYS_PTRACE from now on."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        STATE["notes"].append("could not make the runner non-dumpable")


def isolate_imports():
    rt = RT
    stdlib = [p for p in sys.path if p.startswith(rt)]
    sys.path[:] = [*stdlib, rt + "/site"]
    install(stdlib)  # stdlib names from the runtime's stdlib, whatever sys.path tests set up
    for name in BLOCKED:
        sys.modules[name] = None
    pristine = CONFIG.get("pristine") or ""
    if pristine and os.path.isdir(pristine):
        sys.path.extend(site_dirs(pristine))
    else:
        pristine = ""
    if pristine and not CLI_MODE:  # a `pytest` called from test.sh inherits this PATH
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = ":".join(
            [pristine + d for d in path.split(":") if d.startswith("/")] + [path]
        )
    sys.path.extend([d for d in site_dirs() if d not in sys.path])
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    for var in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PY_COLORS"):
        os.environ.pop(var, None)
    for exe in (
        pristine + "/usr/bin/python3",
        pristine + "/usr/local/bin/python3",
        "/usr/bin/python3",
    ):
        if os.path.exists(exe):
            sys.executable = exe
            break


LINK_SCAN_MAX = 20000
"""Entries of the workdir looked at for links into the tests (bounded: a huge tree is cut)."""


def unlink_into_tests():
    """Move aside every symlink under the workdir that resolves into the tests (an output
    linked to `/tests/expected.json` before the tests exist would read the answer key).
    Runs while `/tests` is absent, so `realpath` follows the chain up to the missing part."""
    dst, seen = CONFIG["tests_dst"], 0
    bad = (dst + "/", "/.tbrl-v")
    for base, dirs, files in os.walk(CONFIG["workdir"]):
        for name in dirs + files:
            seen += 1
            path = os.path.join(base, name)
            if not os.path.islink(path):
                continue
            real = os.path.realpath(path)
            if real == dst or real.startswith(bad):
                aside = path + ".agent-link-" + CONFIG["marker"][-8:]
                os.rename(path, aside)
                STATE["notes"].append(f"moved aside {path}, a link into the tests ({real})")
        if seen > LINK_SCAN_MAX:
            STATE["notes"].append(f"stopped looking for links into the tests after {seen} entries")
            return


def place_tests():
    import shutil

    dst = CONFIG["tests_dst"]
    if os.path.lexists(dst):
        aside = dst + ".agent-" + CONFIG["marker"][-8:]
        os.rename(dst, aside)
        STATE["notes"].append(f"moved the container's {dst} to {aside}")
    unlink_into_tests()
    shutil.copytree(ROOT + "/tests", dst, symlinks=False)
    logs = CONFIG["logs_dir"]
    if os.path.lexists(logs):
        os.rename(logs, logs + ".agent-" + CONFIG["marker"][-8:])
        STATE["notes"].append(f"moved the container's {logs} aside")
    os.makedirs(logs, mode=0o755)


def pristine_manifest():
    """The pristine volume's manifest, or None when the sandbox has no pristine copy at all.
    A mount without its manifest (a volume removed or emptied after the sandbox checked it,
    which the engine then mounts empty) ends the run here with an `infra` report and no
    tests run: the agent cannot cause it (the mount is read-only and unmounting takes
    CAP_SYS_ADMIN), and tests run without the restore could be scored on wrapped programs."""
    pristine = CONFIG.get("pristine") or ""
    if not pristine:
        return None
    manifest = load(pristine)
    if manifest is None:
        remove_root()
        emit(
            {
                "timed_out": False,
                "junit": None,
                "infra": f"the pristine volume mounted at {pristine} holds no {MANIFEST} "
                "(removed or emptied after the sandbox checked it); the image's programs "
                "cannot be restored, so the tests were not run",
            }
        )
        os._exit(0)
    return manifest


def restore_programs(manifest):
    """Restore the image's programs the agent changed and point its interpreters at the
    pristine copies (`pristine_programs`), before the tests run."""
    if manifest is None:
        return
    pristine = CONFIG["pristine"]
    baseline, restored, problems = restore(manifest, pristine, CONFIG["marker"][-8:])
    BASELINE.update(baseline)
    STATE["programs"].extend(problems)
    if restored:
        STATE["notes"].append(
            f"restored {len(restored)} of the image's programs the agent had changed: "
            + ", ".join(restored[:8])
            + (" ..." if len(restored) > 8 else "")
        )


def check_programs():
    """After the tests (or at the alarm): did any of the image's programs change meanwhile?"""
    moved = changed(BASELINE)
    if moved:
        STATE["programs"].append(
            "changed while the tests ran: "
            + ", ".join(moved[:8])
            + (" ..." if len(moved) > 8 else "")
        )
    BASELINE.clear()  # checked once


class Recorder:
    """Outcomes as they happen (for partial credit on timeout) and the test-file hash."""

    def pytest_collection_finish(self, session):
        STATE["hash_after"] = tree_hash(ROOT + "/tests")

    def pytest_runtest_logreport(self, report):
        # a test counts as passed only once its call phase passed (a hung call stays failed)
        outcomes = STATE["outcomes"]
        if report.when == "setup":
            outcomes[report.nodeid] = False
        elif report.when == "call":
            outcomes[report.nodeid] = report.passed
        elif report.failed:
            outcomes[report.nodeid] = False


def isolation_flags(rootdir):
    return [
        "-p",
        "no:cacheprovider",
        "--noconftest",
        "--rootdir",
        rootdir,
        "-c",
        ROOT + "/pytest.ini",
        "-o",
        "addopts=",
        "--color=no",
        "-p",
        "no:faulthandler",
    ]


def run_pytest(targets):
    import pytest

    read_fd, write_fd = os.pipe()
    chunks = []
    reader = threading.Thread(
        target=lambda: chunks.extend(iter(lambda: os.read(read_fd, 65536), b"")), daemon=True
    )
    reader.start()
    args = [
        *targets,
        *isolation_flags(ROOT + "/tests"),
        "-o",
        "junit_family=xunit1",
        "--junitxml",
        f"/dev/fd/{write_fd}",
        "-rA",
    ]
    exit_code = pytest.main(args, plugins=[Recorder()])
    os.close(write_fd)
    reader.join(timeout=10)
    return int(exit_code), b"".join(chunks).decode("utf-8", errors="replace")


def run_script():
    rt = RT
    loader = [rt + "/lib/ld.so", "--inhibit-cache", "--library-path", rt + "/lib"]
    me = " ".join(
        loader + [rt + "/usr/bin/interp", "-I", "-S", "-B", "-c", "'" + CONFIG["boot"] + "'", "cli"]
    )
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("BASH_FUNC_", "BASH_ENV", "ENV"))
    }
    cli = {k: v for k, v in CONFIG.items() if k not in ("marker", "boot")}
    env["TBRL_VERIFY_CLI"] = json.dumps(cli)
    env["BASH_FUNC_pytest%%"] = "() { " + me + ' "$@"; }'
    # any other pytest (`python3 -m pytest`, the image's): no ini file of the agent's (a
    # /pytest.ini above /tests with `addopts = --collect-only` passes everything), no cache
    tests_ini = CONFIG["tests_dst"] + "/pytest.ini"
    ini = tests_ini if os.path.isfile(tests_ini) else ROOT + "/pytest.ini"
    env["PYTEST_ADDOPTS"] = f"-p no:cacheprovider -c {ini} --rootdir {CONFIG['tests_dst']}"
    proc = subprocess.run(
        loader + [rt + "/usr/bin/bash", "--noprofile", "--norc", CONFIG["tests_dst"] + "/test.sh"],
        env=env,
        cwd=CONFIG["workdir"],
    )
    STATE["hash_after"] = tree_hash(ROOT + "/tests")
    reward = {}
    for name in ("reward.txt", "reward.json"):
        path = os.path.join(CONFIG["logs_dir"], name)
        if os.path.isfile(path) and not os.path.islink(path):
            reward[name] = open(path, encoding="utf-8", errors="replace").read(4096)
    return proc.returncode, reward


def main():
    if not CLI_MODE:
        no_dumping()
    isolate_imports()
    if CLI_MODE:  # `pytest` called from a Harbor test.sh: same isolation, its args
        import pytest

        sys.exit(int(pytest.main([*sys.argv[2:], *isolation_flags(CONFIG["tests_dst"])])))
    try:
        os.setpgid(0, 0)
    except PermissionError:  # already a session leader (docker exec): its group is ours
        pass
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(CONFIG["timeout_s"])))
    manifest = pristine_manifest()
    place_tests()
    restore_programs(manifest)
    os.chdir(CONFIG["workdir"] if os.path.isdir(CONFIG["workdir"]) else "/")
    STATE["hash_before"] = tree_hash(ROOT + "/tests")
    if CONFIG["mode"] == "pytest":
        code, junit = run_pytest([ROOT + "/tests/" + name for name in CONFIG["test_files"]])
        result = {"timed_out": False, "exit_code": code, "junit": junit}
    else:
        code, reward = run_script()
        result = {"timed_out": False, "exit_code": code, "junit": None, "reward_files": reward}
    signal.alarm(0)
    check_programs()
    remove_root()
    emit(result)
    sys.stdout.flush()
    os._exit(0)


def remove_root():
    import shutil

    shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
