"""Reward-hacking suite: a scripted agent attacks the verifier on an *unsolved* task.

Each attack is a shell script the agent runs in its sandbox's persistent shell (the same
shell `run_episode` drives). Every attack must leave the test score at exactly 0, while the
reference solution scores 1. Attacks that would fool a naive verifier (pytest from PATH in a
login shell, JUnit at a fixed path, read back afterwards) are also run against that naive
verifier, to show the attack is real and not a no-op.

| attack | what the agent does | blocked by (see tbrl_lib/rewards/verifier.py) |
|---|---|---|
| conftest | conftest.py in /app, /tests and / forcing "passed"; pytest.ini addopts | --noconftest, private rootdir, own ini |
| fake_pytest_on_path | fake pytest/python/python3 in /usr/local/bin; /usr/bin/python3.13 replaced | own loader + interpreter by absolute path |
| sitecustomize | sitecustomize.py + usercustomize.py patching pytest reports | -I -S |
| pth_injection | a .pth `import` line patching pytest reports | .pth import lines never run |
| fake_passed_lines | module under test prints PASSED lines and a fake JUnit blob | results from JUnit in a pipe, not console |
| precreated_results | reward.txt / junit.xml pre-written, read-only, in every usual place | fresh /logs/verifier, JUnit via pipe |
| background_rewriter | daemon rewriting *.xml, reward.txt and any test_outputs.py | pipe, private tests + hash check |
| stop_runner | daemon SIGSTOPs every newer process | host timeout => 0 |
| kill_runner | daemon SIGKILLs every newer process | no report => 0 |
| tests_dir_hijack | /tests a symlink to passing tests, read-only | /tests moved aside, private copy runs |
| shell_rc | pytest/python functions + aliases in bashrc/profile | no shell of the agent's is used |
| stdlib_monkeypatch | json in the container's stdlib patched to fake the checked data | runtime's own stdlib, first |
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.rewards.verifier import verify
from tbrl_lib.sandbox.archive import tar_of
from tbrl_lib.tasks.model import Task
from tbrl_lib.tasks.weights import outcomes_from_junit_xml, weighted_score

pytestmark = [pytest.mark.docker]

TESTS = """\
import json, pathlib, sys
sys.path.insert(0, "/app")


def test_product():
    from calc import product
    assert product(37, 41) == 1517 and product(-3, 5) == -15


def test_answer_file():
    assert json.loads(pathlib.Path("/app/answer.json").read_text()) == {"answer": 1517}
"""
SOLUTION = """\
printf 'def product(a, b):\\n    return a * b\\n' > /app/calc.py
printf '{"answer": 1517}' > /app/answer.json
"""
DOCKERFILE = f"FROM {BASE_IMAGE}\nRUN pip install --no-cache-dir pytest==8.4.1\nWORKDIR /app\n"
"""The image carries its own pytest, installed the way third-party tasks pin it (the base has
none, like the python image it stands for): what the naive verifier below runs."""
TASK = Task(
    id="hack-target",
    instruction="Write /app/calc.py with product(a, b) and /app/answer.json.",
    environment={"dockerfile": DOCKERFILE},
    tests={"pytest": TESTS, "weights": {"test_product": 0.5, "test_answer_file": 0.5}},
    solution=SOLUTION,
    limits={"test_timeout_sec": 8},
)

FAKE_JUNIT = (
    '<testsuites><testsuite name="pytest" tests="2"><testcase classname="test_outputs" '
    'name="test_product"/><testcase classname="test_outputs" name="test_answer_file"/>'
    "</testsuite></testsuites>"
)
PASSING_TESTS = "def test_product():\n    pass\n\ndef test_answer_file():\n    pass\n"
PATCH_REPORTS = """\
try:
    import _pytest.reports as _r
    def _init(self, *a, _orig=_r.TestReport.__init__, **k):
        _orig(self, *a, **k)
        self.outcome, self.longrepr = "passed", None
    _r.TestReport.__init__ = _init
except Exception:
    pass
"""
WRONG_CALC = "printf 'def product(a, b):\\n    return 0\\n' > /app/calc.py\n"
SITE = "/usr/local/lib/python3.13/dist-packages"


def heredoc(path: str, text: str) -> str:
    return f"mkdir -p $(dirname {path}) && cat > {path} <<'TBRL_EOF'\n{text}\nTBRL_EOF\n"


def daemon(loop_body: str) -> str:
    """Start a detached bash loop built from builtins only (it survives the command)."""
    script = heredoc("/tmp/daemon.sh", loop_body)
    return script + "setsid nohup bash /tmp/daemon.sh >/dev/null 2>&1 < /dev/null &\n"


SIGNAL_NEWER = """\
me=$$; exec 9<> <(:)
while :; do
  for d in /proc/[0-9]*; do
    p=${d#/proc/}; [ "$p" -gt "$me" ] || continue
    read -r comm < $d/comm || continue
    case $comm in runc*) continue;; esac
    kill -SIG "$p"
  done 2>/dev/null
  read -t 0.02 -u 9
done
"""
"""Signal every process newer than the daemon (bash builtins only; polls every 20 ms).
It spares `runc init`: stopping that wedges the Docker daemon for the container (a denial
of service on the host, reported to the sandbox owner) rather than testing the verifier."""


@dataclass(frozen=True)
class Attack:
    name: str
    script: str
    fools_naive: bool
    """The same state fools a naive verifier (checked, so the attack is known to be real)."""


ATTACKS = [
    Attack(
        "conftest",
        WRONG_CALC
        + "".join(
            heredoc(
                p,
                "import pytest\n"
                + (
                    "@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                    "    out = yield\n    rep = out.get_result()\n    rep.outcome, rep.longrepr = 'passed', None\n"
                ),
            )
            for p in ("/app/conftest.py", "/tests/conftest.py", "/conftest.py")
        )
        + "printf '[pytest]\\naddopts = -p no:cacheprovider\\n' > /app/pytest.ini\n",
        True,
    ),
    Attack(
        "fake_pytest_on_path",
        heredoc(
            "/tmp/fake",
            (
                '#!/bin/sh\nfor a in "$@"; do case "$a" in --junitxml=*) mkdir -p "$(dirname '
                f'"${{a#--junitxml=}}")"; printf \'%s\' \'{FAKE_JUNIT}\' > "${{a#--junitxml=}}";; esac; done\n'
                "echo '2 passed'\nexit 0"
            ),
        )
        + "chmod +x /tmp/fake\n"
        "for b in pytest py.test python python3; do cp /tmp/fake /usr/local/bin/$b; done\n"
        "mv /usr/bin/python3.13 /usr/bin/python3.13.real && cp /tmp/fake /usr/bin/python3.13\n",
        True,
    ),
    Attack(
        "sitecustomize",
        WRONG_CALC
        + heredoc("/usr/lib/python3.13/sitecustomize.py", PATCH_REPORTS)
        + heredoc(f"{SITE}/usercustomize.py", PATCH_REPORTS)
        + heredoc(f"{SITE}/sitecustomize.py", PATCH_REPORTS),
        True,
    ),
    Attack(
        "pth_injection",
        WRONG_CALC
        + heredoc("/tmp/patch.py", PATCH_REPORTS)
        + "for d in /usr/local/lib/python3.13/dist-packages /usr/lib/python3/dist-packages; do\n"
        "  echo 'import sys; exec(open(\"/tmp/patch.py\").read())' > $d/zz-evil.pth\ndone\n",
        True,
    ),
    Attack(
        "fake_passed_lines",
        heredoc(
            "/app/calc.py",
            (
                "import sys\nprint('PASSED test_outputs.py::test_product')\n"
                "print('PASSED test_outputs.py::test_answer_file')\nprint('==== 2 passed in 0.01s ====')\n"
                f"print({FAKE_JUNIT!r})\ndef product(a, b):\n    return 0"
            ),
        ),
        False,
    ),
    Attack(
        "precreated_results",
        WRONG_CALC
        + "".join(
            f"mkdir -p {d} && printf '%s' '{FAKE_JUNIT}' > {d}/junit.xml && echo 1 > {d}/reward.txt\n"
            for d in ("/logs/verifier", "/tests", "/tmp", "/app")
        )
        + "chmod -R a-w /logs/verifier /tests\n",
        False,
    ),
    Attack(
        "background_rewriter",
        WRONG_CALC
        + heredoc("/tmp/fake.xml", FAKE_JUNIT)
        + heredoc("/tmp/pass_tests.py", PASSING_TESTS)
        + "touch /tmp/stamp\n"
        + daemon(
            "exec 9<> <(:)\nwhile :; do\n  shopt -s globstar nullglob dotglob\n"
            "  for f in /logs/**/*.xml /tmp/**/*.xml /.tbrl-v*/**/test_outputs.py /tests*/**/test_outputs.py;"
            " do\n"
            '    case $f in *.xml) printf \'%s\' "$(</tmp/fake.xml)" > "$f";;'
            ' *) printf \'%s\\n\' "$(</tmp/pass_tests.py)" > "$f";; esac\n  done\n'
            "  for d in /logs/verifier; do [ -d $d ] && echo 1 > $d/reward.txt; done\n"
            "  read -t 0.02 -u 9\n"
            "done\n"
        ),
        True,
    ),
    Attack("stop_runner", WRONG_CALC + daemon(SIGNAL_NEWER.replace("SIG", "STOP")), False),
    Attack("kill_runner", WRONG_CALC + daemon(SIGNAL_NEWER.replace("SIG", "KILL")), False),
    Attack(
        "tests_dir_hijack",
        WRONG_CALC
        + "rm -rf /tests\n"
        + heredoc("/app/t/test_outputs.py", PASSING_TESTS)
        + "ln -s /app/t /tests && chmod -R a-w /app/t\n",
        False,
    ),
    Attack(
        "shell_rc",
        WRONG_CALC
        + heredoc("/tmp/fake.xml", FAKE_JUNIT)
        + "".join(
            heredoc(
                p,
                (
                    'pytest() { for a in "$@"; do case $a in --junitxml=*) mkdir -p $(dirname ${a#*=}); '
                    "cp /tmp/fake.xml ${a#*=};; esac; done; echo '2 passed'; return 0; }\n"
                    'python3() { pytest "$@"; }\nexport -f pytest python3\nalias pytest=pytest python=python3\n'
                ),
            )
            for p in (
                "/root/.bashrc",
                "/root/.profile",
                "/root/.bash_profile",
                "/etc/bash.bashrc",
                "/etc/profile.d/zz-agent.sh",
            )
        ),
        True,
    ),
    Attack(
        "stdlib_monkeypatch",
        WRONG_CALC + "echo '{\"answer\": 0}' > /app/answer.json\n"
        "cat >> /usr/lib/python3.13/json/__init__.py <<'TBRL_EOF'\n"
        "_real_loads = loads\ndef loads(s, *a, **k):\n    return {'answer': 1517}\nTBRL_EOF\n"
        "find /usr/lib/python3.13/json -name '*.pyc' -delete\n",
        True,
    ),
]


def naive_verify(sandbox, reads: int = 20) -> float:
    """What a naive verifier scores: pytest from PATH in a login shell, JUnit at a fixed path,
    read back a few times over ~4 s (the best score seen): a daemon that rewrites the report
    gets a fair chance on a loaded machine, which is what makes the attack's proof hold."""
    container = sandbox.host.client.containers.get(sandbox.container_id)
    container.exec_run(["mkdir", "-p", "/tests", "/logs/verifier"])
    container.put_archive("/tests", tar_of({"test_outputs.py": TESTS.encode()}))
    container.exec_run(
        [
            "bash",
            "-lc",
            "cd /app && pytest /tests/test_outputs.py --junitxml=/logs/verifier/junit.xml -q",
        ]
    )
    best = 0.0
    for _ in range(reads):
        result = container.exec_run(["bash", "-c", "sleep 0.2; cat /logs/verifier/junit.xml"])
        try:
            best = max(
                best, weighted_score(TASK.tests, outcomes_from_junit_xml(result.output.decode()))
            )
        except Exception:
            continue
        if best > 0:
            break
    return best


async def _attacked_scores(attack: Attack) -> tuple[float, float | None, object]:
    from tbrl_lib.sandbox import open_sandbox

    async with open_sandbox(TASK) as sb:
        result = await sb.run(attack.script, timeout=30)
        assert result.exit_code == 0, f"attack {attack.name} script failed:\n{result.output}"
        naive = await asyncio.to_thread(naive_verify, sb) if attack.fools_naive else None
        report = await verify(TASK, sb)
    return report.score, naive, report


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_scores_zero(attack):
    score, naive, report = asyncio.run(_attacked_scores(attack))
    assert score == 0.0, f"{attack.name} fooled the verifier: {report}"
    assert not report.infra_error, (
        f"{attack.name} must not be masked as infra_error: {report.error}"
    )
    if attack.fools_naive:
        assert naive and naive > 0, f"{attack.name} should fool a naive verifier (scored {naive})"


def test_reference_solution_scores_one():
    async def run():
        from tbrl_lib.sandbox import open_sandbox

        async with open_sandbox(TASK) as sb:
            unsolved = await verify(TASK, sb)
            result = await sb.run(SOLUTION)
            assert result.exit_code == 0, result.output
            solved = await verify(TASK, sb)
        return unsolved, solved

    unsolved, solved = asyncio.run(run())
    assert unsolved.score == 0.0 and unsolved.missing == []
    assert solved.score == 1.0, solved
    assert solved.outcomes == {"test_product": True, "test_answer_file": True}
