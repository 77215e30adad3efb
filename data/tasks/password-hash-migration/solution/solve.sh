#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/auth.py <<'EOF'
import hashlib
import hmac
import os

ITERATIONS = 200_000


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)
    return f"pbkdf2_sha256${ITERATIONS}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        if stored.startswith("pbkdf2_sha256$"):
            _, iters, salt, digest = stored.split("$")
            got = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(iters))
            return hmac.compare_digest(got.hex(), digest)
        if len(stored) == 64 and all(c in "0123456789abcdef" for c in stored):
            return hmac.compare_digest(hashlib.sha256(password.encode()).hexdigest(), stored)
    except (ValueError, TypeError):
        return False
    return False
EOF
python3 - <<'EOF'
import hashlib, sqlite3
words = {w for w in open("/app/wordlist.txt").read().splitlines() if w}
by_hash = {hashlib.sha256(w.encode()).hexdigest() for w in words}
con = sqlite3.connect("/app/auth.db")
cols = [r[1] for r in con.execute("PRAGMA table_info(users)")]
if "must_reset" not in cols:
    con.execute("ALTER TABLE users ADD COLUMN must_reset INTEGER NOT NULL DEFAULT 0")
weak = sorted(u for u, h in con.execute("SELECT username, password_hash FROM users") if h in by_hash)
con.execute("UPDATE users SET must_reset = 0")
con.executemany("UPDATE users SET must_reset = 1 WHERE username = ?", [(u,) for u in weak])
con.commit()
open("/app/weak_users.txt", "w").write("".join(u + "\n" for u in weak))
EOF
