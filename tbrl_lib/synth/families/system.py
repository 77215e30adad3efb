"""Families about the system around the code: users and permissions, git history
surgery, a service listening on a port.

Everything stays inside the container: users are created with shadow-utils already in
the base image, git repositories are built at image-build time from a script with fixed
dates, and the service is reached over loopback (the tests start it with the agent's
`start.sh` when nothing is listening yet, so a rollout need not leave a daemon behind).
"""

from __future__ import annotations

import random
import textwrap

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, heredoc, pick, pytest_module
from tbrl_lib.tasks.model import Difficulty

# ------------------------------------------------------------------- users/permissions

NAMES = [
    "alice",
    "bruno",
    "chen",
    "dara",
    "emeka",
    "farah",
    "goran",
    "hana",
    "ivo",
    "jun",
    "kemal",
    "lena",
    "mateo",
    "nadia",
    "oskar",
    "priya",
]


def permissions_users(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    project = rng.choice(WORDS)
    group, gid = f"{project}-dev", rng.randint(2000, 2999)
    people = pick(rng, NAMES, 2 + level)
    uids = rng.sample(range(3000, 3999), len(people))
    users = [
        {"name": n, "uid": u, "shell": rng.choice(["/bin/bash", "/bin/sh"])}
        for n, u in zip(people, uids)
    ]
    owner = users[0]["name"]
    key_mode = rng.choice([0o640, 0o600])
    shared = f"/srv/{project}"
    script_mode = rng.choice([0o750, 0o755])
    lines = [f"- a group `{group}` with GID {gid}"]
    lines += [
        f"- a user `{u['name']}` with UID {u['uid']}, login shell `{u['shell']}`, a home "
        f"directory `/home/{u['name']}`, and `{group}` as a supplementary group"
        for u in users
    ]
    lines += [
        f"- `{shared}` owned by `root:{group}`, mode 2770 (group members can work "
        "there; new files inherit the group)",
        f"- `{shared}/keys/deploy.key` (already there) owned by `{owner}:{group}`, mode "
        f"{key_mode:04o}",
    ]
    locked = None
    if level >= 1:
        lines.append(
            f"- `/app/bin/deploy.sh` is world-writable: make it mode {script_mode:04o}, "
            "owned by root"
        )
    if level >= 2:
        locked = users[-1]["name"]
        lines.append(
            f"- lock the password of `{locked}` (the account stays, login by password is disabled)"
        )
    instruction = (
        f"""
Set up access for the `{project}` project on this machine (you are root):
"""
        + "\n".join(lines)
        + """

Use the standard tools (groupadd, useradd, usermod, chown, chmod, passwd); do not edit
files under /etc by hand.
"""
    )
    expected = {
        "group": group,
        "gid": gid,
        "users": users,
        "shared": shared,
        "owner": owner,
        "key_mode": key_mode,
        "script_mode": script_mode if level >= 1 else None,
        "locked": locked,
    }
    body = """
    import grp
    import pwd
    import stat

    def test_group():
        assert grp.getgrnam(E["group"]).gr_gid == E["gid"]

    def test_users():
        members = set(grp.getgrnam(E["group"]).gr_mem)
        for user in E["users"]:
            entry = pwd.getpwnam(user["name"])
            assert (entry.pw_uid, entry.pw_shell) == (user["uid"], user["shell"]), user
            assert entry.pw_dir == "/home/" + user["name"] and os.path.isdir(entry.pw_dir)
            assert user["name"] in members

    def test_shared_directory():
        st = os.stat(E["shared"])
        assert st.st_uid == 0 and st.st_gid == E["gid"]
        assert stat.S_IMODE(st.st_mode) == 0o2770

    def test_key_file():
        st = os.stat(E["shared"] + "/keys/deploy.key")
        assert pwd.getpwuid(st.st_uid).pw_name == E["owner"] and st.st_gid == E["gid"]
        assert stat.S_IMODE(st.st_mode) == E["key_mode"]
    """
    weights = {
        "test_group": 1.0,
        "test_users": 2.0,
        "test_shared_directory": 1.0,
        "test_key_file": 1.0,
    }
    if level >= 1:
        body += """
    def test_deploy_script():
        st = os.stat("/app/bin/deploy.sh")
        assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == E["script_mode"]
    """
        weights["test_deploy_script"] = 1.0
    if level >= 2:
        body += """
    def test_locked_account():
        shadow = {l.split(":")[0]: l.split(":")[1] for l in open("/etc/shadow") if ":" in l}
        assert shadow[E["locked"]].startswith("!")
    """
        weights["test_locked_account"] = 1.0
    solution = f"groupadd -g {gid} {group}\n"
    solution += "".join(
        f"useradd -m -u {u['uid']} -s {u['shell']} -G {group} {u['name']}\n" for u in users
    )
    solution += (
        f"chown root:{group} {shared}\nchmod 2770 {shared}\n"
        f"chown {owner}:{group} {shared}/keys/deploy.key\n"
        f"chmod {key_mode:04o} {shared}/keys/deploy.key\n"
    )
    if level >= 1:
        solution += f"chown root /app/bin/deploy.sh\nchmod {script_mode:04o} /app/bin/deploy.sh\n"
    if locked:
        solution += f"passwd -l {locked}\n"
    return Draft(
        title=f"Users, groups and permissions for the {project} project",
        instruction=instruction,
        app_files={
            "bin/deploy.sh": "#!/bin/sh\necho deploying\n",
            "seed/deploy.key": f"key-{rng.getrandbits(64):016x}\n",
        },
        build_steps=[
            f"RUN mkdir -p {shared}/keys && mv /app/seed/deploy.key {shared}/keys/ "
            f"&& rmdir /app/seed && chmod 0644 {shared}/keys/deploy.key "
            "&& chmod 0777 /app/bin/deploy.sh"
        ],
        tests=pytest_module({"E": expected}, body),
        weights=weights,
        solution=solution,
        tags=["linux", "users", "permissions"],
        answers=expected,
    )


# ---------------------------------------------------------------------- git surgery

GIT_OPS = ["purge_secret", "revert", "cherry_pick", "tag"]


def git_surgery(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    ops = sorted(pick(rng, GIT_OPS, 1 + level), key=GIT_OPS.index)
    mod, feat = rng.choice(WORDS), rng.choice([w for w in WORDS])
    token = f"tok_{rng.getrandbits(80):020x}"
    rate = rng.randint(2, 9)
    version = f"1.{rng.randint(1, 9)}.0"
    helper = rng.choice(["slugify", "clamp", "chunked", "dedupe", "retry"])
    setup = [
        "set -e",
        "mkdir -p /app/repo && cd /app/repo",
        "git init -q -b main",
        "git config user.email dev@example.com && git config user.name Dev",
        "export GIT_AUTHOR_DATE='2024-01-01T10:00:00' GIT_COMMITTER_DATE='2024-01-01T10:00:00'",
        'c() { git add -A && git commit -q -m "$1"; }',
    ]
    setup += [
        "echo 1.0.0 > VERSION",
        f"echo 'RATE = {rate}' > {mod}.py",
        "echo '# project' > README.md",
        "c 'Initial commit'",
    ]
    bad = rng.choice(
        [
            "Change rate rounding",
            "Tune rate multiplier",
            "Adjust pricing rate",
            "Scale rate for promo",
        ]
    )
    secret = rng.choice(
        ["config/credentials.env", "config/secrets.env", "deploy/token.txt", "ops/api.env"]
    )
    n_noise = rng.randint(3 + 2 * level, 5 + 3 * level)
    secret_at, release_at = rng.randint(0, n_noise // 2), rng.randint(n_noise // 2, n_noise - 1)
    for i in range(n_noise):
        word = rng.choice(WORDS)
        setup += [
            f"mkdir -p docs && echo '{' '.join(pick(rng, WORDS, 4))}' >> docs/{word}.md",
            f"c '{rng.choice(['Document', 'Expand', 'Clarify', 'Tidy'])} {word} notes'",
        ]
        if i == secret_at:
            setup += [
                f"mkdir -p $(dirname {secret}) config",
                f"echo 'API_TOKEN={token}' > {secret}",
                "c 'Add local settings'",
                "echo 'DEBUG=0' > config/app.env",
                f"git rm -q {secret}",
                "c 'Move settings to app.env'",
            ]
        if i == release_at:
            setup += [
                f"echo {version} > VERSION",
                f"c 'Release {version}'",
                f"echo 'RATE = {rate * 10}' > {mod}.py",
                f"c '{bad}'",
            ]
    setup += [
        f"git checkout -q -b feature/{feat}",
        f"echo 'def {helper}(x): return x' > helpers.py",
        f"c 'Add {helper} helper'",
        "echo 'experimental' > EXPERIMENT.md",
        "c 'Experimental work'",
        "git checkout -q main",
        "git gc -q",
    ]
    steps, body, weights = [], "", {}
    solution = ["cd /app/repo", "git config user.email dev@example.com", "git config user.name Dev"]
    if "revert" in ops:
        steps.append(
            f"The commit '{bad}' broke pricing: undo it on `main` with a "
            "new commit (do not drop it from history)."
        )
        solution.append(f"git revert --no-edit $(git log --format=%H --grep='^{bad}$' main)")
        body += f'''
    def test_revert():
        assert git("show", "main:{mod}.py").strip() == "RATE = {rate}"
        log = git("log", "--format=%s", "main").splitlines()
        assert "{bad}" in log and any(s.startswith("Revert") for s in log)
    '''
        weights["test_revert"] = 2.0
    if "cherry_pick" in ops:
        steps.append(
            f"Bring only the commit 'Add {helper} helper' from `feature/{feat}` onto "
            "`main` (not the rest of that branch); keep the feature branch."
        )
        solution.append(
            f"git cherry-pick $(git log --format=%H --grep='^Add {helper} helper$' feature/{feat})"
        )
        body += f"""
    def test_cherry_pick():
        assert "def {helper}" in git("show", "main:helpers.py")
        assert "EXPERIMENT.md" not in git("ls-tree", "--name-only", "main").split()
        assert git("rev-parse", "--verify", "feature/{feat}")
    """
        weights["test_cherry_pick"] = 2.0
    if "tag" in ops:
        steps.append(
            f"Create an annotated tag `v{version}` on the commit that released "
            f"version {version} (the one that set VERSION to it)."
        )
        solution.append(
            f"git tag -a v{version} -m 'Release {version}' "
            f"$(git log --format=%H --grep='^Release {version}$' main)"
        )
        body += f"""
    def test_tag():
        assert git("cat-file", "-t", "v{version}") == "tag"
        assert git("log", "-1", "--format=%s", "v{version}^{{commit}}") == "Release {version}"
    """
        weights["test_tag"] = 1.0
    if "purge_secret" in ops:
        steps.append(
            f"An API token was committed in `{secret}` and later deleted. "
            "Remove that file from the whole history of every branch and tag, so no "
            "reachable commit contains the token; keep all other files and commit "
            "messages."
        )
        solution += [
            "export FILTER_BRANCH_SQUELCH_WARNING=1",
            "git filter-branch -f --index-filter 'git rm -q --cached --ignore-unmatch "
            f"{secret}' --tag-name-filter cat --prune-empty -- --all",
            "rm -rf .git/refs/original",
            "git reflog expire --expire=now --all",
            "git gc -q --prune=now",
        ]
        body += """
    def test_secret_gone():
        history = git("log", "--all", "-p")
        assert TOKEN not in history and SECRET not in history
        assert "Move settings to app.env" in git("log", "--format=%s", "main")
    """
        weights["test_secret_gone"] = 2.0
    instruction = (
        "The git repository in `/app/repo` needs some history work:\n\n"
        + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps))
        + "\n\nLeave `main` checked out with a clean working tree.\n"
    )
    header = textwrap.dedent("""
    def git(*args):
        proc = subprocess.run(["git", "-C", "/app/repo", *args], capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()
    """)
    return Draft(
        title=f"Git history work: {', '.join(o.replace('_', ' ') for o in ops)}",
        instruction=instruction,
        app_files={".setup/make_repo.sh": "\n".join(setup) + "\n"},
        build_steps=["RUN bash /app/.setup/make_repo.sh && rm -rf /app/.setup"],
        tests=pytest_module({"TOKEN": token, "SECRET": secret}, header + textwrap.dedent(body)),
        weights=weights,
        solution="set -e\n" + "\n".join(solution) + "\n",
        tags=["git", "version-control"],
        answers={
            "ops": ops,
            "token": token,
            "secret": secret,
            "bad": bad,
            "rate": rate,
            "version": version,
            "helper": helper,
        },
    )


# --------------------------------------------------------------------- service on a port

SERVICE_TESTS = """
import socket
import time
import urllib.error
import urllib.request

import pytest


def listening():
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", PORT)) == 0


@pytest.fixture(scope="module", autouse=True)
def service():
    if not listening():
        subprocess.Popen(["bash", "/app/start.sh"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, cwd="/app")
        deadline = time.time() + 10
        while time.time() < deadline and not listening():
            time.sleep(0.25)
    assert listening(), f"nothing listens on port {PORT} after running /app/start.sh"


def call(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_health():
    assert call("GET", "/health") == (200, {"status": "ok", "service": NAME})


def test_item_lookup():
    for item in ITEMS[:3]:
        assert call("GET", "/items/" + item["id"]) == (200, item)
    assert call("GET", "/items/does-not-exist") == (404, {"error": "not found"})
"""

SERVICE_STATS = """

def test_stats():
    code, body = call("GET", "/stats")
    assert code == 200 and body["count"] >= len(ITEMS)
    assert abs(body["total_value"] - TOTAL) < 0.01 or body["count"] > len(ITEMS)
"""

SERVICE_POST = """

def test_post_requires_key():
    assert call("POST", "/items", NEW)[0] == 401
    assert call("POST", "/items", NEW, {"X-Api-Key": "wrong"})[0] == 401


def test_post_stores_item():
    assert call("POST", "/items", NEW, {"X-Api-Key": KEY})[0] == 201
    assert call("GET", "/items/" + NEW["id"]) == (200, NEW)
"""

SERVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
PORT, NAME = int(sys.argv[1]), sys.argv[2]
ITEMS = {i["id"]: i for i in json.load(open("/app/data/items.json"))}
KEY = open("/app/secrets/api_key").read().strip() if len(sys.argv) > 3 else None
class H(BaseHTTPRequestHandler):
    def send(self, code, body):
        raw = json.dumps(body).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw))); self.end_headers(); self.wfile.write(raw)
    def do_GET(self):
        if self.path == "/health":
            return self.send(200, {"status": "ok", "service": NAME})
        if self.path == "/stats":
            return self.send(200, {"count": len(ITEMS), "total_value": round(sum(i["price"] * i["qty"] for i in ITEMS.values()), 2)})
        if self.path.startswith("/items/") and self.path[7:] in ITEMS:
            return self.send(200, ITEMS[self.path[7:]])
        self.send(404, {"error": "not found"})
    def do_POST(self):
        if self.path != "/items" or KEY is None:
            return self.send(404, {"error": "not found"})
        if self.headers.get("X-Api-Key") != KEY:
            return self.send(401, {"error": "unauthorized"})
        item = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        ITEMS[item["id"]] = item
        self.send(201, item)
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("0.0.0.0", PORT), H).serve_forever()
"""


def service_port(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    name, port = rng.choice(WORDS) + "-api", rng.randint(8000, 9900)
    items = [
        {
            "id": f"{w}-{rng.randint(100, 999)}",
            "name": w.title(),
            "price": rng.randint(100, 5000) / 100,
            "qty": rng.randint(1, 40),
        }
        for w in pick(rng, WORDS, 5 + 3 * level)
    ]
    total = round(sum(i["price"] * i["qty"] for i in items), 2)
    key = f"k{rng.getrandbits(48):012x}"
    new = {"id": f"new-{rng.randint(100, 999)}", "name": "Fresh", "price": 1.5, "qty": 2}
    spec = [
        f'- `GET /health` -> 200 `{{"status": "ok", "service": "{name}"}}`',
        "- `GET /items/<id>` -> 200 with that item's object from `/app/data/items.json`, "
        'or 404 `{"error": "not found"}`',
    ]
    body, weights = SERVICE_TESTS, {"test_health": 1.0, "test_item_lookup": 2.0}
    if level >= 1:
        spec.append(
            '- `GET /stats` -> 200 `{"count": <number of items>, "total_value": '
            "<sum of price*qty, rounded to 2 decimals>}`"
        )
        body, weights["test_stats"] = body + SERVICE_STATS, 1.0
    if level >= 2:
        spec.append(
            "- `POST /items` with a JSON item body -> 201 with the item, after which "
            "`GET /items/<id>` returns it; requests without the header `X-Api-Key` "
            "equal to the key in `/app/secrets/api_key` get 401"
        )
        body += SERVICE_POST
        weights.update(test_post_requires_key=1.0, test_post_stores_item=1.0)
    instruction = (
        f"""
Set up the `{name}` HTTP service on port {port} of this machine (JSON responses):
"""
        + "\n".join(spec)
        + """

Write `/app/start.sh`: running `bash /app/start.sh` must start the service in the
background and return; then start it so it is running when you finish. Only the Python
standard library is available (no network for installing packages).
"""
    )
    args = f"{port} {name}" + (" with-key" if level >= 2 else "")
    solution = (
        heredoc("/app/server.py", SERVER)
        + heredoc("/app/start.sh", f"nohup python3 /app/server.py {args} >/app/server.log 2>&1 &")
        + "bash /app/start.sh\nsleep 1\n"
    )
    files = {"data/items.json": __import__("json").dumps(items, indent=2) + "\n"}
    if level >= 2:
        files["secrets/api_key"] = key + "\n"
    return Draft(
        title=f"Serve {name} on port {port}",
        instruction=instruction,
        app_files=files,
        tests=pytest_module(
            {"PORT": port, "NAME": name, "ITEMS": items, "TOTAL": total, "KEY": key, "NEW": new},
            body,
        ),
        weights=weights,
        solution=solution,
        tags=["networking", "http", "service"],
        answers={"port": port, "name": name, "total": total},
    )
