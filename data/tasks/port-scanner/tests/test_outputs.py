import socket
import subprocess
import time


def listeners(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        socks.append(s)
    return socks


def scan(*args):
    return subprocess.run(["python3", "/app/scan.py", *args], capture_output=True, text=True, timeout=60)


def test_finds_open_ports_in_list():
    socks = listeners(3)
    ports = sorted(s.getsockname()[1] for s in socks)
    closed = listeners(1)
    closed_port = closed[0].getsockname()[1]
    closed[0].close()
    r = scan("127.0.0.1", ",".join(map(str, [ports[2], closed_port, ports[0], ports[1]])), "--timeout", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(p) for p in ports]
    for s in socks:
        s.close()


def test_range_and_speed():
    socks = listeners(1)
    port = socks[0].getsockname()[1]
    lo = max(1, port - 500)
    start = time.time()
    r = scan("127.0.0.1", f"{lo}-{lo + 999}", "--timeout", "3")
    elapsed = time.time() - start
    assert r.returncode == 0, r.stderr
    assert str(port) in r.stdout.split()
    assert elapsed < 20, elapsed
    socks[0].close()


def test_invalid_specs():
    assert scan("127.0.0.1", "1").returncode == 0
    for spec in ["abc", "0", "70000", "100-50", "80,", "1-2-3"]:
        r = scan("127.0.0.1", spec)
        assert r.returncode == 2 and r.stderr.strip(), spec
        assert r.stdout == ""


def test_nothing_open():
    s = listeners(1)[0]
    port = s.getsockname()[1]
    s.close()
    r = scan("127.0.0.1", str(port))
    assert r.returncode == 0 and r.stdout.strip() == ""
    assert scan("127.0.0.1", "1-0").returncode == 2
