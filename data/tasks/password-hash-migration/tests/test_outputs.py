import hashlib
import sqlite3
import sys

sys.path.insert(0, "/app")


def weak_expected():
    words = {w for w in open("/app/wordlist.txt").read().splitlines() if w}
    hashes = {hashlib.sha256(w.encode()).hexdigest() for w in words}
    con = sqlite3.connect("/app/auth.db")
    return sorted(u for u, h in con.execute("SELECT username, password_hash FROM users") if h in hashes)


def test_weak_users_listed():
    got = [l for l in open("/app/weak_users.txt").read().splitlines() if l]
    assert got == weak_expected() and len(got) >= 5


def test_must_reset_column():
    con = sqlite3.connect("/app/auth.db")
    rows = dict(con.execute("SELECT username, must_reset FROM users"))
    weak = set(weak_expected())
    assert rows == {u: int(u in weak) for u in rows} and len(rows) == 12


def test_hash_format_and_salt():
    import auth
    a, b = auth.hash_password("s3cret"), auth.hash_password("s3cret")
    assert a != b
    algo, iters, salt, digest = a.split("$")
    assert algo == "pbkdf2_sha256" and int(iters) >= 100000 and len(bytes.fromhex(salt)) >= 16
    assert hashlib.pbkdf2_hmac("sha256", b"s3cret", bytes.fromhex(salt), int(iters)).hex() == digest


def test_verify_both_formats():
    import auth
    new = auth.hash_password("pa55-word")
    assert auth.verify_password("pa55-word", new) is True
    assert auth.verify_password("pa55-words", new) is False
    legacy = hashlib.sha256("hunter2".encode()).hexdigest()
    assert auth.verify_password("hunter2", legacy) is True
    assert auth.verify_password("hunter3", legacy) is False


def test_verify_malformed():
    import auth
    for bad in ["", "pbkdf2_sha256$x$zz$00", "md5$1$2$3", "abc", "pbkdf2_sha256$1000"]:
        assert auth.verify_password("x", bad) is False
    assert "compare_digest" in open("/app/auth.py").read()
