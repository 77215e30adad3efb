import os
import shutil
import sqlite3
import subprocess
import tempfile


def migrate(db, mdir):
    return subprocess.run(["python3", "/app/migrate.py", db, mdir], capture_output=True, text=True, timeout=60)


def columns(con, table):
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def test_app_db_migrated():
    con = sqlite3.connect("/app/app.db")
    assert [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY version")] == [1, 2, 3, 10]
    assert "name" in columns(con, "users") and "created_at" in columns(con, "posts")
    assert con.execute("SELECT count(*) FROM users").fetchone()[0] == 2


def test_fresh_db_and_idempotent():
    d = tempfile.mkdtemp()
    db = os.path.join(d, "x.db")
    r = migrate(db, "/app/migrations")
    assert r.returncode == 0, r.stderr
    assert [l for l in r.stdout.splitlines() if l] == ["applied 001_create_users.sql", "applied 002_add_name.sql",
                                                      "applied 003_create_posts.sql", "applied 010_add_created.sql"]
    r = migrate(db, "/app/migrations")
    assert r.returncode == 0 and r.stdout.strip() == ""


def test_numeric_ordering():
    d = tempfile.mkdtemp()
    m = os.path.join(d, "m")
    os.makedirs(m)
    open(os.path.join(m, "9_a.sql"), "w").write("CREATE TABLE t (x INTEGER);")
    open(os.path.join(m, "10_b.sql"), "w").write("ALTER TABLE t ADD COLUMN y INTEGER;")
    r = migrate(os.path.join(d, "db"), m)
    assert r.returncode == 0, r.stderr
    assert columns(sqlite3.connect(os.path.join(d, "db")), "t") == ["x", "y"]


def test_failed_migration_rolls_back():
    d = tempfile.mkdtemp()
    m = os.path.join(d, "m")
    shutil.copytree("/app/migrations", m)
    open(os.path.join(m, "011_bad.sql"), "w").write(
        "CREATE TABLE audit (id INTEGER);\nINSERT INTO nonexistent VALUES (1);\n")
    open(os.path.join(m, "012_later.sql"), "w").write("CREATE TABLE later (id INTEGER);\n")
    db = os.path.join(d, "db")
    r = migrate(db, m)
    assert r.returncode == 1 and "011_bad.sql" in r.stderr
    con = sqlite3.connect(db)
    tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "audit" not in tables and "later" not in tables and "posts" in tables
    assert max(v for (v,) in con.execute("SELECT version FROM schema_migrations")) == 10
