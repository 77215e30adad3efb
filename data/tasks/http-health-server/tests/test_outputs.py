import json
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def base():
    port = free_port()
    proc = subprocess.Popen(["python3", "/app/server.py", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait(timeout=10)


def call(url, data=None):
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), json.loads(e.read())


def test_health(base):
    status, ctype, body = call(base + "/health")
    assert status == 200 and body == {"status": "ok"}
    assert ctype.startswith("application/json")


def test_sum(base):
    assert call(base + "/sum?a=40&b=2")[::2] == (200, {"result": 42})
    assert call(base + "/sum?a=-5&b=3")[::2] == (200, {"result": -2})
    status, _, body = call(base + "/sum?a=x&b=1")
    assert status == 400 and "error" in body
    assert call(base + "/sum?a=1")[0] == 400


def test_echo(base):
    payload = {"k": [1, 2, {"z": None}], "s": "h\u00e9"}
    assert call(base + "/echo", json.dumps(payload).encode())[::2] == (200, payload)
    status, _, body = call(base + "/echo", b"{not json")
    assert status == 400 and "error" in body


def test_not_found_and_survives(base):
    assert call(base + "/nope")[::2] == (404, {"error": "not found"})
    assert call(base + "/health")[0] == 200
