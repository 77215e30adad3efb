"""Families where something is broken and must be repaired: a service config, a buggy
script, a failing build.

Faults are drawn from a pool per instance (difficulty sets how many), so two seeds break
different things and expect different fixes. Expected outputs of scripts are computed by
running the correct program here, in-process, on the same inputs the tests use; an
instance is redrawn when a planted bug would not change the output.
"""

from __future__ import annotations

import json
import random
import tempfile
import textwrap
from pathlib import Path

from tbrl_lib.synth.families.base import LEVEL, WORDS, Draft, heredoc, pick, pytest_module
from tbrl_lib.tasks.model import Difficulty

# ----------------------------------------------------------------------- config repair

CHECKER = r'''
"""Start-up check for the service: `python3 app.py --check` exits 0 when the config is usable."""
import csv, json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
cfg = json.load(open(os.path.join(HERE, "config.json")))
ports = {r["service"]: int(r["port"]) for r in csv.DictReader(open("/app/deploy/ports.csv"))}
problems = []
if cfg.get("port") != ports.get(cfg.get("name")):
    problems.append("port must be the one assigned to this service in /app/deploy/ports.csv")
if cfg.get("log_level") not in ("DEBUG", "INFO", "WARNING", "ERROR"):
    problems.append("log_level must be DEBUG, INFO, WARNING or ERROR")
if not isinstance(cfg.get("workers"), int) or not 1 <= cfg["workers"] <= 16:
    problems.append("workers must be an integer from 1 to 16")
if not (isinstance(cfg.get("data_dir"), str) and os.path.isdir(cfg["data_dir"])):
    problems.append("data_dir must be an existing directory")
if not isinstance(cfg.get("timeout_s"), (int, float)) or cfg["timeout_s"] <= 0:
    problems.append("timeout_s must be a positive number of seconds")
for up in cfg.get("upstreams", []):
    host, _, port = up.partition(":")
    if not port.isdigit() or int(port) != ports.get(host):
        problems.append(f"upstream {up!r} must be host:port with the port from ports.csv")
if problems:
    sys.exit("config invalid:\n- " + "\n- ".join(problems))
print("config OK")
'''

SYNTAX_FAULTS = ["trailing_comma", "single_quotes", "missing_comma"]
VALUE_FAULTS = ["port", "log_level", "workers", "data_dir", "timeout_s", "upstream"]


def config_repair(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    names = pick(rng, WORDS, 5)
    name, upstream_hosts = names[0], names[1:3]
    ports = dict(zip(names, rng.sample(range(2000, 9999), len(names))))
    good = {
        "name": name,
        "port": ports[name],
        "log_level": rng.choice(["INFO", "WARNING"]),
        "workers": rng.randint(2, 8),
        "data_dir": f"/app/data/{name}",
        "timeout_s": rng.choice([15, 30, 45, 60]),
        "upstreams": [f"{h}:{ports[h]}" for h in upstream_hosts],
        "features": {w: rng.random() < 0.5 for w in pick(rng, WORDS, 3)},
        "owner": f"team-{rng.choice(WORDS)}",
    }
    faults = sorted(pick(rng, VALUE_FAULTS, 1 + level))
    broken = json.loads(json.dumps(good))
    hints = {
        "port": ("port", ports[names[3]]),
        "log_level": ("log_level", good["log_level"].lower()[:4]),
        "workers": ("workers", str(good["workers"])),
        "data_dir": ("data_dir", f"/app/data/{name}-old"),
        "timeout_s": ("timeout_s", f"{good['timeout_s']}s"),
    }
    for fault in faults:
        if fault == "upstream":
            broken["upstreams"][0] = upstream_hosts[0]
        else:
            key, value = hints[fault]
            broken[key] = value
    text = _break_syntax(json.dumps(broken, indent=2), rng.choice(SYNTAX_FAULTS))
    ports_csv = "service,port\n" + "".join(f"{n},{p}\n" for n, p in ports.items())
    notes = f"""# {name} service settings

- `port`: the port assigned to `{name}` in `/app/deploy/ports.csv`
- `log_level`: one of DEBUG, INFO, WARNING, ERROR (this deployment runs at {good["log_level"]})
- `workers`: integer, 1-16 (this host runs {good["workers"]})
- `data_dir`: the service's data directory, `/app/data/{name}`
- `timeout_s`: seconds as a number ({good["timeout_s"]} here)
- `upstreams`: `host:port` strings; ports as in `/app/deploy/ports.csv`
- everything else (`features`, `owner`, ...) is set by other teams: leave it as it is
"""
    instruction = f"""
The `{name}` service in `/app/service/` refuses to start: `python3 /app/service/app.py --check`
fails. Repair `/app/service/config.json` so the check passes and every setting follows
`/app/service/SETTINGS.md`. Change only what is wrong; keep the file valid JSON and keep
every other key and value as it is. Do not modify `app.py`.
"""
    body = """
    def load():
        return json.loads(Path("/app/service/config.json").read_text())

    def test_config_is_valid_json():
        assert isinstance(load(), dict)

    def test_check_passes():
        proc = subprocess.run(["python3", "/app/service/app.py", "--check"],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr

    def test_settings_have_expected_values():
        cfg = load()
        for key in ("port", "log_level", "workers", "data_dir", "timeout_s", "upstreams"):
            assert cfg[key] == GOOD[key], key

    def test_other_keys_untouched():
        cfg = load()
        assert sorted(cfg) == sorted(GOOD)
        for key in ("name", "features", "owner"):
            assert cfg[key] == GOOD[key], key
    """
    return Draft(
        title=f"Repair the {name} service configuration",
        instruction=instruction,
        app_files={
            "service/config.json": text,
            "service/app.py": CHECKER.lstrip(),
            "service/SETTINGS.md": notes,
            "deploy/ports.csv": ports_csv,
            f"data/{name}/.keep": "",
            f"data/{names[4]}/.keep": "",
        },
        tests=pytest_module({"GOOD": good}, body),
        weights={
            "test_config_is_valid_json": 1.0,
            "test_check_passes": 2.0,
            "test_settings_have_expected_values": 2.0,
            "test_other_keys_untouched": 1.0,
        },
        solution=heredoc("/app/service/config.json", json.dumps(good, indent=2)),
        tags=["config", "json", "debugging"],
        answers={"faults": faults, "good": good},
    )


def _break_syntax(text: str, kind: str) -> str:
    lines = text.splitlines()
    if kind == "trailing_comma":
        lines[-2] = lines[-2] + ","
    elif kind == "single_quotes":
        lines[1] = lines[1].replace('"', "'")
    else:
        lines[2] = lines[2].rstrip(",")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------ script debug

SCRIPT = '''
"""Summarise a scores CSV (name,team,score): per-team count, mean and best player."""
import csv
import json
import math
import sys


def summarize(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows = {ROWS}
    teams = {{}}
    for row in rows:
        team = {TEAM}
        score = {SCORE}
        teams.setdefault(team, []).append((score, row["name"]))
    out = {{}}
    for team in {ORDER}:
        entries = teams[team]
        total = math.fsum(s for s, _ in entries)
        best = entries[0]
        for entry in entries[1:]:
            if {BEST}:
                best = entry
        out[team] = {{"count": len(entries), "mean": round({MEAN}, 2), "best": best[1]}}
    scores = sorted(s for entries in teams.values() for s, _ in entries)
    mid = len(scores) // 2
    median = {MEDIAN}
    return {{"teams": out, "median": median}}


if __name__ == "__main__":
    print(json.dumps(summarize(sys.argv[1]), indent=2))
'''

SLOTS = {
    "ROWS": ("rows", "rows[1:]"),
    "TEAM": ('row["team"].strip().lower()', 'row["team"]'),
    "SCORE": ('float(row["score"])', 'int(row["score"])'),
    "ORDER": ("sorted(teams)", "sorted(teams, reverse=True)"),
    "BEST": ("entry[0] > best[0]", "entry[0] < best[0]"),
    "MEAN": ("total / len(entries)", "total // len(entries)"),
    "MEDIAN": (
        "scores[mid] if len(scores) % 2 else (scores[mid - 1] + scores[mid]) / 2",
        "scores[mid]",
    ),
}
"""Slot -> (correct code, planted bug)."""


def _script(bugs: set[str]) -> str:
    return SCRIPT.format(**{k: v[k in bugs] for k, v in SLOTS.items()}).lstrip()


def _run(source: str, csv_text: str, tmp_name: str = "/tmp/_tbrl_synth_scores.csv"):
    namespace: dict = {"__name__": "tbrl_synth_check"}
    exec(compile(source, "report.py", "exec"), namespace)  # our own generated code
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores.csv"
        path.write_text(csv_text)
        try:
            return namespace["summarize"](str(path))
        except Exception as err:  # a planted bug may crash: that is a different output
            return f"crash: {type(err).__name__}"


def _scores_csv(rng: random.Random, n: int) -> str:
    teams = pick(rng, ["red", "blue", "green", "gold", "teal"], 3)
    rows = []
    for _ in range(n):
        team = rng.choice(teams)
        shown = rng.choice([team, f" {team}", team.title()])
        rows.append(
            f"{rng.choice(WORDS)}-{rng.randint(10, 99)},{shown},{rng.randint(100, 999) / 10}"
        )
    return "name,team,score\n" + "\n".join(rows) + "\n"


def script_debug(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    correct = _script(set())
    for _ in range(100):
        bugs = set(pick(rng, sorted(SLOTS), 1 + level))
        buggy = _script(bugs)
        inputs = [_scores_csv(rng, rng.randint(10, 14) * 2) for _ in range(3)]
        expected = [_run(correct, text) for text in inputs]
        if all(_run(buggy, text) != exp for text, exp in zip(inputs, expected)):
            break
    else:
        raise RuntimeError("could not draw data that exposes every planted bug")
    body = """
    def run_on(tmp_path, name, text):
        data = tmp_path / name
        data.write_text(text)
        proc = subprocess.run(["python3", "/app/report.py", str(data)],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def test_given_data():
        assert run_on_path("/app/data/scores.csv") == EXPECTED[0]

    def test_hidden_data_one(tmp_path):
        assert run_on(tmp_path, "a.csv", HIDDEN[0]) == EXPECTED[1]

    def test_hidden_data_two(tmp_path):
        assert run_on(tmp_path, "b.csv", HIDDEN[1]) == EXPECTED[2]

    def run_on_path(path):
        proc = subprocess.run(["python3", "/app/report.py", path],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    """
    instruction = f"""
`/app/report.py` summarises a scores file: `python3 /app/report.py /app/data/scores.csv`
prints JSON with, per team, the number of players (`count`), the mean score rounded to
2 decimals (`mean`) and the best player's name (`best`, highest score; first one wins a
tie), plus the `median` of all scores. Team names are case-insensitive and may carry stray
spaces (report them trimmed and lower-case); teams are listed in alphabetical order; scores
may have decimals.

The output is wrong. Find and fix the bugs in `/app/report.py` (there are {len(bugs)}) so
it follows this description for any such file, not just the one given. Keep the output
format as it is.
"""
    return Draft(
        title="Fix the bugs in a score report script",
        instruction=instruction,
        app_files={"report.py": buggy, "data/scores.csv": inputs[0]},
        tests=pytest_module({"HIDDEN": inputs[1:], "EXPECTED": expected}, body),
        weights={"test_given_data": 1.0, "test_hidden_data_one": 2.0, "test_hidden_data_two": 2.0},
        solution=heredoc("/app/report.py", correct),
        tags=["python", "debugging"],
        answers={"bugs": sorted(bugs), "expected": expected},
    )


# -------------------------------------------------------------------------- build fix

TOOLS = {
    "rot": (
        "shift each letter by {k} places (a-z, A-Z; other characters unchanged)",
        "def transform(text):\n    out = []\n    for ch in text:\n"
        "        if ch.isalpha() and ch.isascii():\n"
        "            base = ord('a') if ch.islower() else ord('A')\n"
        "            ch = chr((ord(ch) - base + {k}) % 26 + base)\n"
        "        out.append(ch)\n    return ''.join(out)\n",
    ),
    "checksum": (
        "print the sum of (position+1)*byte over the UTF-8 bytes, modulo {m}",
        "def transform(text):\n    data = text.encode()\n"
        "    return str(sum((i + 1) * b for i, b in enumerate(data)) % {m})\n",
    ),
    "vowels": (
        "replace every vowel (aeiou, either case) with '{c}'",
        "def transform(text):\n    return ''.join('{c}' if ch.lower() in 'aeiou' else ch "
        "for ch in text)\n",
    ),
}
BUILD_FAULTS = ["source_dir", "syntax", "import_name", "version_quotes", "dist_dir"]


def build_fix(rng: random.Random, difficulty: Difficulty) -> Draft:
    level = LEVEL[difficulty]
    pkg, tool = rng.choice(WORDS), rng.choice(sorted(TOOLS))
    params = {
        "k": rng.randint(1, 25),
        "m": rng.choice([97, 251, 1009, 65521]),
        "c": rng.choice("*#@%"),
    }
    describe, core = TOOLS[tool][0].format(**params), TOOLS[tool][1].format(**params)
    version = f"{rng.randint(0, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
    faults = set(pick(rng, BUILD_FAULTS[2:], level)) | {rng.choice(BUILD_FAULTS[:2])}
    files = _project(pkg, core, version, faults)
    ns: dict = {}
    exec(core, ns)  # our own generated code: the expected outputs
    probes = [" ".join(pick(rng, WORDS, 3)).title() + f" {rng.randint(10, 99)}!" for _ in range(3)]
    expected = [ns["transform"](p) for p in probes]
    correct = _project(pkg, core, version, set())
    instruction = f"""
`/app/project` builds a command-line tool into a single file: `bash build.sh` (run in
`/app/project`) should produce `dist/{pkg}.pyz`, and
`python3 dist/{pkg}.pyz TEXT` should {describe} and print the result, while
`python3 dist/{pkg}.pyz --version` prints the version from the `VERSION` file.
The build is broken. Fix the project so that a clean `bash build.sh` succeeds and the tool
behaves as described. Keep the layout (`src/{pkg}/`, `build.sh`, `VERSION`); leave a built
`dist/{pkg}.pyz` in place.
"""
    body = f'''
    import shutil

    import pytest

    PROJECT = Path("/app/project")

    @pytest.fixture(scope="module", autouse=True)
    def build():
        """One clean build per test run (every test needs the built tool)."""
        shutil.rmtree(PROJECT / "dist", ignore_errors=True)
        proc = subprocess.run(["bash", "build.sh"], cwd=PROJECT, capture_output=True,
                              text=True, timeout=60)
        return proc

    def tool(*args):
        proc = subprocess.run(["python3", str(PROJECT / "dist" / "{pkg}.pyz"), *args],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def test_clean_build_succeeds(build):
        assert build.returncode == 0, build.stdout + build.stderr
        assert (PROJECT / "dist" / "{pkg}.pyz").is_file()

    def test_version():
        assert tool("--version") == VERSION

    def test_transform():
        assert [tool(p) for p in PROBES] == EXPECTED
    '''
    solution = "".join(heredoc(f"/app/project/{p}", t) for p, t in correct.items())
    solution += "cd /app/project && bash build.sh\n"
    return Draft(
        title=f"Fix the broken build of the {pkg} tool",
        instruction=instruction,
        app_files={f"project/{p}": t for p, t in files.items()},
        tests=pytest_module({"VERSION": version, "PROBES": probes, "EXPECTED": expected}, body),
        weights={"test_clean_build_succeeds": 1.0, "test_version": 1.0, "test_transform": 2.0},
        solution=solution,
        tags=["build", "python", "packaging"],
        answers={"faults": sorted(faults), "expected": expected, "version": version},
    )


def _project(pkg: str, core: str, version: str, faults: set[str]) -> dict[str, str]:
    src = "source" if "source_dir" in faults else "src"
    quote = "" if "version_quotes" in faults else '\\"'
    mkdir = "" if "dist_dir" in faults else "mkdir -p dist\n"
    helper = "helper" if "import_name" in faults else "text_ops"
    if "syntax" in faults:
        core = core.replace("def transform(text):", "def transform(text)")
    build = textwrap.dedent(f"""\
        #!/bin/bash
        set -euo pipefail
        cd "$(dirname "$0")"
        echo "VERSION = {quote}$(cat VERSION){quote}" > {src}/{pkg}/_version.py
        python3 -m compileall -q {src}
        {mkdir}python3 -m zipapp {src} -m "{pkg}.cli:main" -o dist/{pkg}.pyz
        echo "built dist/{pkg}.pyz"
        """).replace("\n\n", "\n")
    cli = textwrap.dedent(f"""\
        import sys

        from {pkg}._version import VERSION
        from {pkg}.{helper} import transform


        def main():
            if sys.argv[1:] == ["--version"]:
                print(VERSION)
            else:
                print(transform(" ".join(sys.argv[1:])))
        """)
    return {
        "build.sh": build,
        "VERSION": version + "\n",
        f"src/{pkg}/__init__.py": "",
        f"src/{pkg}/cli.py": cli,
        f"src/{pkg}/text_ops.py": core,
    }
