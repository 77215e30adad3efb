#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/migrate.py <<'EOF'
import datetime
import os
import re
import sqlite3
import sys


def main(db, mdir):
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {v for (v,) in con.execute("SELECT version FROM schema_migrations")}
    files = []
    for name in os.listdir(mdir):
        m = re.fullmatch(r"(\d+)_.+\.sql", name)
        if m:
            files.append((int(m.group(1)), name))
    for version, name in sorted(files):
        if version in done:
            continue
        sql = open(os.path.join(mdir, name)).read()
        try:
            con.execute("BEGIN")
            for stmt in split(sql):
                con.execute(stmt)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?)",
                        (version, datetime.datetime.now(datetime.timezone.utc).isoformat()))
            con.execute("COMMIT")
        except sqlite3.Error as err:
            con.execute("ROLLBACK")
            print(f"{name}: {err}", file=sys.stderr)
            return 1
        print(f"applied {name}")
    return 0


def split(sql):
    stmts, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            stmts.append(buf.strip())
            buf = ""
    if buf.strip():
        stmts.append(buf.strip())
    return stmts


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
EOF
python3 /app/migrate.py /app/app.db /app/migrations
