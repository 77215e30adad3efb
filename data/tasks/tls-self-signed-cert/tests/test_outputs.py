import hashlib
import os
import socket
import ssl
import stat
import subprocess
import threading

CRT, KEY = "/app/certs/server.crt", "/app/certs/server.key"


def text():
    return subprocess.run(["openssl", "x509", "-in", CRT, "-noout", "-text"], capture_output=True, text=True, check=True).stdout


def test_key_properties():
    assert stat.S_IMODE(os.stat(KEY).st_mode) == 0o600
    out = subprocess.run(["openssl", "pkey", "-in", KEY, "-noout", "-text"], capture_output=True, text=True, check=True).stdout
    bits = int(out.split("Private-Key: (")[1].split(" bit")[0])
    assert "modulus" in out.lower() and bits >= 2048


def test_subject_san_and_signature():
    t = text()
    subj = subprocess.run(["openssl", "x509", "-in", CRT, "-noout", "-subject", "-nameopt", "RFC2253"],
                          capture_output=True, text=True, check=True).stdout
    assert "CN=api.internal.test" in subj and "O=Example Ops" in subj
    assert "DNS:api.internal.test" in t and "DNS:localhost" in t and "IP Address:127.0.0.1" in t
    assert "sha256WithRSAEncryption" in t


def test_validity_period():
    r = subprocess.run(["openssl", "x509", "-in", CRT, "-noout", "-checkend", str(364 * 86400)])
    assert r.returncode == 0
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CRT, KEY)


def test_fingerprint():
    der = ssl.PEM_cert_to_DER_cert(open(CRT).read())
    want = ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())
    assert open("/app/certs/fingerprint.txt").read().strip() == want


def handshake(host):
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(CRT, KEY)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(10)

    def serve():
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as s:
                s.sendall(b"hello")
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cafile=CRT)
    with socket.create_connection(listener.getsockname(), timeout=10) as raw:
        with client_ctx.wrap_socket(raw, server_hostname=host) as s:
            assert s.recv(5) == b"hello"
    thread.join(10)
    listener.close()


def test_tls_handshake_verifies():
    for host in ["api.internal.test", "127.0.0.1"]:
        handshake(host)
