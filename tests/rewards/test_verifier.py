"""The verifier: scoring from the runner's report (no Docker), and in real containers the
weighted partial credit, missing tests, the test timeout and Harbor `test.sh` tasks."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import sys

import pytest

from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.rewards import verifier
from tbrl_lib.rewards.verifier import _score, expected_tree_hash, verify
from tbrl_lib.tasks.model import Task

TESTS = "def test_a():\n    assert True\n\ndef test_b():\n    assert True\n\ndef test_c():\n    assert True\n"
TASK = Task(
    id="v",
    instruction="x",
    environment={"dockerfile": f"FROM {BASE_IMAGE}\nWORKDIR /app\n"},
    tests={"pytest": TESTS, "weights": {"test_a": 2, "test_b": 1, "test_c": 1}},
)
JUNIT = (
    '<testsuites><testsuite><testcase classname="test_outputs" name="test_a"/>'
    '<testcase classname="test_outputs" name="test_b"><failure message="x"/></testcase>'
    '<testcase classname="test_outputs" name="extra"/></testsuite></testsuites>'
)


def frame(marker: str, **payload) -> bytes:
    blob = base64.b64encode(json.dumps(payload).encode()).decode()
    return f"noise PASSED test_b\n{marker} {blob}\n".encode()


def pristine() -> str:
    return expected_tree_hash(
        {
            "tests/test_outputs.py": TESTS.encode(),
            "tests/test_weights.json": json.dumps(TASK.tests.weights).encode(),
        }
    )


def test_weighted_partial_credit_and_missing_tests_count_as_failed():
    h = pristine()
    report = _score(TASK, frame("M", junit=JUNIT, hash_before=h, hash_after=h), "M", h)
    assert report.score == pytest.approx(0.5)  # test_a (weight 2 of 4) passed
    assert report.outcomes == {"test_a": True, "test_b": False, "test_c": False}
    assert report.missing == ["test_c"] and report.unexpected == ["extra"]


def test_no_report_or_changed_tests_score_zero_without_infra_error():
    h = pristine()
    assert _score(TASK, b"PASSED test_a\n3 passed", "M", h).score == 0.0
    changed = _score(TASK, frame("M", junit=JUNIT, hash_before=h, hash_after="other"), "M", h)
    assert changed.score == 0.0 and "changed" in changed.error and not changed.infra_error
    forged = _score(TASK, frame("WRONG", junit=JUNIT, hash_before=h, hash_after=h), "M", h)
    assert forged.score == 0.0, "a frame with another marker is ignored"


def test_timeout_keeps_finished_tests():
    h = pristine()
    report = _score(
        TASK,
        frame(
            "M",
            timed_out=True,
            junit=None,
            hash_before=h,
            hash_after=h,
            outcomes={"test_outputs.py::test_a": True},
        ),
        "M",
        h,
    )
    assert report.timed_out and report.score == pytest.approx(0.5)


def test_runner_hash_matches_the_host_side_hash(tmp_path, monkeypatch):
    files = {
        "tests/test_outputs.py": b"x",
        "tests/data/in.txt": b"y",
        "tests/data/sub/z": b"z",
        "tests/a.json": b"{}",
    }
    for rel, content in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(content)
    monkeypatch.setenv(
        "TBRL_VERIFY", json.dumps({"root": str(tmp_path), "rt": "/nowhere", "marker": "M"})
    )
    monkeypatch.setattr(sys, "argv", ["-c"])
    spec = importlib.util.spec_from_file_location(
        "runner_under_test", verifier.__file__.replace("verifier.py", "verifier_runner.py")
    )
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    assert runner.tree_hash(str(tmp_path / "tests")) == expected_tree_hash(files)


# -- real containers -------------------------------------------------------------------


def _in_sandbox(task: Task, setup: str = "", timeout: float | None = None):
    from tbrl_lib.sandbox import open_sandbox

    async def go():
        async with open_sandbox(task) as sb:
            if setup:
                result = await sb.run(setup)
                assert result.exit_code == 0, result.output
            return await verify(task, sb, timeout=timeout)

    return asyncio.run(go())


@pytest.mark.docker
def test_partial_credit_in_a_container():
    task = TASK.model_copy(
        update={
            "tests": TASK.tests.model_copy(
                update={
                    "pytest": TESTS.replace(
                        "def test_b():\n    assert True",
                        "def test_b():\n    assert open('/app/b').read() == 'b'",
                    )
                }
            )
        }
    )
    report = _in_sandbox(task)
    assert report.score == pytest.approx(0.75) and report.outcomes["test_b"] is False
    assert report.duration_s < 30 and not report.infra_error


@pytest.mark.docker
def test_hanging_tests_hit_the_timeout_and_keep_finished_results():
    slow = "import time\n\ndef test_a():\n    pass\n\ndef test_b():\n    time.sleep(600)\n\ndef test_c():\n    pass\n"
    task = TASK.model_copy(update={"tests": TASK.tests.model_copy(update={"pytest": slow})})
    report = _in_sandbox(task, timeout=4)
    assert (
        report.timed_out
        and report.outcomes["test_a"] is True
        and report.outcomes["test_b"] is False
    )
    assert report.score == pytest.approx(0.5) and report.duration_s < 20


HARBOR_SH = """#!/bin/bash
mkdir -p /logs/verifier
if pytest /tests/test_outputs.py -q; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


@pytest.mark.docker
def test_harbor_script_task_reads_reward_txt_and_ignores_a_prewritten_one():
    task = Task(
        id="h",
        instruction="x",
        environment={
            "dockerfile": f"FROM {BASE_IMAGE}\nRUN pip install pytest==8.4.1\nWORKDIR /app\n"
        },
        tests={
            "script": HARBOR_SH,
            "files": {"test_outputs.py": "def test_x():\n    assert open('/app/ok').read()\n"},
        },
    )
    failed = _in_sandbox(
        task, setup="mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt"
    )
    assert failed.mode == "script" and failed.score == 0.0
    passed = _in_sandbox(task, setup="echo yes > /app/ok")
    assert passed.score == 1.0, passed


@pytest.mark.docker
def test_score_rollout_combines_verifier_and_judge():
    from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
    from tbrl_lib.rewards import RewardConfig, score_rollout
    from tbrl_lib.rewards.judges import JudgeChain, make_judge
    from tbrl_lib.sandbox import open_sandbox

    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "<bash>\ncmd: ls /app\n</bash>"},
    ]
    trajectory = Trajectory(task_id=TASK.id, policy="scripted", messages=messages)

    async def go(server):
        down = JudgeChain(
            [
                make_judge(
                    "openai:gpt-4o", base_url=server.openai_base_url, api_key="t", max_retries=0
                )
            ]
        )
        async with open_sandbox(TASK) as sb:
            judged = await score_rollout(TASK, sb, trajectory, make_judge("rule"))
            missing = await score_rollout(
                TASK, sb, trajectory, down, RewardConfig(on_judge_missing="infra_error")
            )
        return judged, missing

    with LLMServer(default=Reply.server_error()) as server:
        (b1, tests, j1), (b2, _, j2) = asyncio.run(go(server))
    assert tests.score == 1.0 and j1.judge == "rule"
    assert b1.total == pytest.approx(0.65 + 0.35 * j1.score)
    assert (
        b2.scores["judge"] is None
        and b2.infra_error
        and b2.total == 1.0
        and "every judge failed" in b2.missing["judge"]
    )
