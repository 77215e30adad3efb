import json
import os
import subprocess
import tempfile

INDEX = json.load(open("/app/index.json"))


def resolve(reqs, index=None):
    d = tempfile.mkdtemp()
    paths = []
    for name, data in (("index.json", index or INDEX), ("req.json", reqs)):
        paths.append(os.path.join(d, name))
        with open(paths[-1], "w") as f:
            json.dump(data, f)
    return subprocess.run(["python3", "/app/resolve.py", *paths], capture_output=True, text=True, timeout=60)


def lock(reqs, index=None):
    r = resolve(reqs, index)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_backtracks_to_compatible_versions():
    assert lock({"web": "*"}) == {"core": "2.1.0", "log": "1.1.0", "util": "3.2.0", "web": "2.0.0"}


def test_root_constraints_and_not_equal():
    assert lock({"web": "<2.0.0", "util": "!=2.5.0"}) == {"core": "1.0.0", "log": "1.1.0", "util": "3.2.0", "web": "1.5.0"}
    assert lock({"util": ">1.0.0,<=3.0.0"}) == {"util": "3.0.0"}


def test_assigned_dependency_checked():
    index = {"a": {"2.0.0": {}, "1.0.0": {}}, "b": {"1.0.0": {"a": "<2.0.0"}}}
    assert lock({"a": "*", "b": "*"}, index) == {"a": "1.0.0", "b": "1.0.0"}
    index = {"a": {"1.10.0": {}, "1.9.0": {}}}
    assert lock({"a": "<1.11.0"}, index) == {"a": "1.10.0"}


def test_conflict_and_unknown():
    r = resolve({"web": ">=2.0.0", "util": "<2.0.0"})
    assert r.returncode == 1 and "conflict" in r.stderr.lower()
    r = resolve({"nosuch": "*"})
    assert r.returncode == 2 and "nosuch" in r.stderr


def test_lock_file_for_app():
    want = lock(json.load(open("/app/requirements.json")))
    assert want == {"cli": "0.9.0", "core": "1.0.0", "log": "1.1.0", "util": "3.2.0", "web": "1.5.0"}
    assert json.load(open("/app/lock.json")) == want
