import json
import os
import subprocess
import tempfile
import zlib


def kv(d, *args):
    return subprocess.run(["python3", "/app/kv.py", d, *args], capture_output=True, text=True, timeout=30)


def records(d):
    out = []
    for line in open(os.path.join(d, "wal.log"), "rb").read().split(b"\n")[:-1]:
        crc, body = line.split(b"\t", 1)
        assert crc.decode() == f"{zlib.crc32(body):08x}"
        out.append(json.loads(body))
    return out


def test_basic_commands():
    d = tempfile.mkdtemp()
    assert kv(d, "set", "b", "two words").returncode == 0
    assert kv(d, "set", "a", "tab\there \u00e9\u6f22").returncode == 0
    assert kv(d, "set", "b", "2").returncode == 0
    assert kv(d, "get", "b").stdout == "2\n"
    assert kv(d, "get", "a").stdout == "tab\there \u00e9\u6f22\n"
    r = kv(d, "get", "zzz")
    assert r.returncode == 1 and r.stdout == ""
    assert kv(d, "delete", "b").returncode == 0 and kv(d, "delete", "b").returncode == 1
    assert kv(d, "list").stdout == "a=tab\there \u00e9\u6f22\n"


def test_log_format():
    d = tempfile.mkdtemp()
    kv(d, "set", "x", "1")
    kv(d, "set", "y", "line1\nline2")
    kv(d, "delete", "x")
    assert records(d) == [{"op": "set", "key": "x", "value": "1"},
                          {"op": "set", "key": "y", "value": "line1\nline2"},
                          {"op": "del", "key": "x"}]
    assert kv(d, "get", "y").stdout == "line1\nline2\n"


def test_torn_tail_ignored_and_repaired():
    d = tempfile.mkdtemp()
    kv(d, "set", "k", "v1")
    with open(os.path.join(d, "wal.log"), "ab") as f:
        f.write(b'deadbeef\t{"op": "set", "key": "k", "val')
    assert kv(d, "get", "k").stdout == "v1\n"
    assert kv(d, "set", "j", "w").returncode == 0
    assert [r["key"] for r in records(d)] == ["k", "j"]
    body = b'{"op": "set", "key": "k", "value": "bad"}'
    with open(os.path.join(d, "wal.log"), "ab") as f:
        f.write(b"00000000\t" + body + b"\n")
    assert kv(d, "get", "k").stdout == "v1\n"
    assert kv(d, "delete", "j").returncode == 0
    assert [r["op"] for r in records(d)] == ["set", "set", "del"]


def test_corruption_detected():
    d = tempfile.mkdtemp()
    for i in range(3):
        kv(d, "set", f"k{i}", str(i))
    path = os.path.join(d, "wal.log")
    lines = open(path, "rb").read().split(b"\n")
    lines[1] = lines[1].replace(b'"1"', b'"9"')
    open(path, "wb").write(b"\n".join(lines))
    before = open(path, "rb").read()
    for args in (["get", "k0"], ["set", "z", "1"], ["list"]):
        r = kv(d, *args)
        assert r.returncode == 3 and "corrupt" in r.stderr.lower() and "2" in r.stderr
    assert open(path, "rb").read() == before


def test_compact():
    d = tempfile.mkdtemp()
    for i in range(10):
        kv(d, "set", f"key{i % 4}", f"value{i}")
    kv(d, "delete", "key2")
    before = kv(d, "list").stdout
    assert kv(d, "compact").returncode == 0
    assert os.listdir(d) == ["wal.log"]
    assert records(d) == [{"op": "set", "key": k, "value": v} for k, v in
                          (l.split("=", 1) for l in before.splitlines())]
    assert kv(d, "list").stdout == before
