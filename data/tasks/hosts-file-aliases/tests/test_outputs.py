import socket
import subprocess


def entries():
    pairs = []
    for line in open("/app/services.txt"):
        if line.strip():
            name, addr = line.split()
            pairs.append((name, addr))
    return pairs


def test_python_resolves():
    for name, addr in entries():
        assert socket.gethostbyname(name) == addr


def test_getent_resolves():
    for name, addr in entries():
        out = subprocess.run(["getent", "hosts", name], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.split()[0] == addr


def test_localhost_kept():
    assert socket.gethostbyname("localhost") == "127.0.0.1"
    assert socket.gethostbyname("db.internal") == "127.0.0.2"
