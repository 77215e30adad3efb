import json
import os
import subprocess
import tempfile


def run(tasks, *args):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "tasks.json")
    with open(path, "w") as f:
        json.dump(tasks, f)
    r = subprocess.run(["python3", "/app/runner.py", *args[:-1], path, *args[-1]],
                       capture_output=True, text=True, timeout=60, cwd="/")
    return r, d


def t(deps, cmd):
    return {"deps": deps, "cmd": cmd}


def order(stdout):
    return [l[4:] for l in stdout.splitlines() if l.startswith("==> ")]


DIAMOND = {"d": t(["b", "c"], "echo d >> log"), "b": t(["a"], "echo b >> log"),
           "c": t(["a"], "echo c >> log"), "a": t([], "echo a >> log"), "z": t([], "echo z >> log")}


def test_diamond_order_and_once():
    r, d = run(DIAMOND, ["d"])
    assert r.returncode == 0, r.stderr
    assert order(r.stdout) == ["a", "b", "c", "d"]
    assert open(os.path.join(d, "log")).read().split() == ["a", "b", "c", "d"]


def test_alphabetical_ready_choice_and_multiple_targets():
    tasks = {"m": t(["y"], "true"), "y": t([], "true"), "b": t([], "true"), "x": t(["b"], "true")}
    r, _ = run(tasks, ["m", "x"])
    assert order(r.stdout) == ["b", "x", "y", "m"]


def test_dry_run():
    r, d = run(DIAMOND, "--dry-run", ["d", "z"])
    assert r.returncode == 0 and order(r.stdout) == ["a", "b", "c", "d", "z"]
    assert not os.path.exists(os.path.join(d, "log"))


def test_failure_stops():
    tasks = {"a": t([], "echo a >> log; exit 4"), "b": t(["a"], "echo b >> log")}
    r, d = run(tasks, ["b"])
    assert r.returncode == 1 and "FAILED a" in r.stderr
    assert open(os.path.join(d, "log")).read().split() == ["a"]


def test_missing_and_cycle():
    r, d = run({"a": t(["ghost"], "echo a >> log")}, ["a"])
    assert r.returncode == 2 and "ghost" in r.stderr and not os.path.exists(os.path.join(d, "log"))
    r, _ = run({"a": t([], "true")}, ["nope"])
    assert r.returncode == 2 and "nope" in r.stderr
    cyc = {"p": t(["q"], "echo p >> log"), "q": t(["r"], "true"), "r": t(["p"], "true"), "s": t(["p"], "true")}
    r, d = run(cyc, ["s"])
    assert r.returncode == 3 and "cycle" in r.stderr.lower()
    assert all(n in r.stderr for n in "pqr") and not os.path.exists(os.path.join(d, "log"))
