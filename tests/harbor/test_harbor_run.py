"""Real Harbor 0.25.0 running tbrl's agent on three bundled tasks exported to Harbor's
format, against this machine's Docker engine: the oracle solves 3/3 through `tbrl eval
harbor`, the no-op 0/3, a scripted policy (a loopback OpenAI-compatible server whose
replies depend on the task and the turn) gets the same per-task outcomes as `tbrl eval run`,
and the token ids in Harbor's `rollout_details` are the ones the server produced.

The Harbor image is built once (about a minute from PyPI) and cached by its recipe hash;
each test then costs one `harbor run` of three trials at concurrency 3 (30-90 s here)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tbrl_lib.agent.actions import render_action
from tbrl_lib.docker.tool_containers import COMPOSE_DIR_LABEL
from tbrl_lib.evaluate.harness import run_eval
from tbrl_lib.evaluate.report import compare_runs
from tbrl_lib.evaluate.results import RunConfig, RunResults
from tbrl_lib.fake_llm_server.llm_server import LLMServer, RecordedRequest
from tbrl_lib.harbor.image import ensure_harbor_image
from tbrl_lib.harbor.runner import HarborRunError, run_harbor
from tbrl_lib.tasks import load_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.harbor]

REPO = Path(__file__).resolve().parents[2]
TB2 = REPO / "tests" / "tasks" / "fixtures" / "third_party" / "tb2"
TASK_IDS = ("access-log-report", "archive-integrity", "config-precedence")
"""The first three bundled tasks (what `--tasks data/tasks --limit 3` picks)."""
SOLVED = "config-precedence"
"""The one task the scripted policy solves (by acting out its reference solution)."""


@pytest.fixture(scope="module")
def harbor_image(docker_client, base_image) -> str:
    return ensure_harbor_image(log=lambda _: None)[0]


@pytest.fixture(scope="module")
def tasks():
    loaded = load_tasks(REPO / "data" / "tasks", "strict", progress=False).tasks
    return [t for t in loaded if t.id in TASK_IDS]


def config(policy: str) -> RunConfig:
    return RunConfig(policy=policy, concurrency=3, reward={"judge": "none"})


def test_eval_harbor_oracle_solves_three_bundled_tasks(tbrl, harbor_image, tmp_path):
    out = tmp_path / "oracle"
    result = tbrl(
        "eval", "harbor", "--tasks", REPO / "data" / "tasks", "--limit", 3,
        "--policy", "oracle", "--concurrency", 3, "--out", out,
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    run = RunResults.load(out)
    assert {t.task_id: t.failure_mode.value for t in run.trials} == dict.fromkeys(
        TASK_IDS, "resolved"
    )
    assert run.summary["accuracy"] == 1.0 and run.summary["infra_errors"] == 0
    for trial in run.trials:  # tbrl's trajectory of each Harbor trial, beside Harbor's files
        traj = json.loads((out / trial.trajectory).read_text())
        assert traj["termination"] == "finished" and trial.turns == 4


def test_third_party_set_with_a_broken_dockerfile_as_tbrl_eval_run_reports_it(
    tbrl, harbor_image, tmp_path
):
    """The same fixture and outcomes as tests/evaluate/test_third_party_eval.py: an Ubuntu
    base image tag this engine lacks (a substitute is tagged), pinned pip test dependencies
    installed by each task's own Dockerfile, and one Dockerfile that fails a step."""
    out = tmp_path / "tb2"
    result = tbrl(
        "eval", "harbor", "--tasks", TB2, "--policy", "oracle", "--concurrency", 3, "--out", out
    )
    assert result.code == 0, result.err + result.out
    run = RunResults.load(out)
    assert {t.task_id: t.failure_mode.value for t in run.trials} == {
        "broken-test-deps": "task_error",
        "sales-by-region": "resolved",
        "word-count-py313": "resolved",
    }
    assert run.summary["infra_errors"] == 0 and run.summary["accuracy"] == 1.0
    (broken,) = [t for t in run.trials if t.failure_mode.value == "task_error"]
    assert "ERROR: No matching distribution found for iniconfig==9.0.0" in broken.error
    assert "task error (not scored): broken-test-deps: its image does not build" in result.err


def test_noop_solves_none(harbor_image, tasks, tmp_path):
    run = run_harbor(tasks, config("noop"), tmp_path, log=lambda _: None)
    assert {t.task_id: t.failure_mode.value for t in run.trials} == dict.fromkeys(
        TASK_IDS, "no_action"
    )
    assert run.summary["accuracy"] == 0.0 and run.summary["infra_errors"] == 0


class Script:
    """Replies by task and turn: the solved task's solution is written and run over three
    turns that need `cd` and `export` to persist (a relative file path, a variable); every
    other task looks around and finishes. Ids: one per character, as a server tokenizes."""

    def __init__(self, tasks) -> None:
        self.tasks = tasks
        self.sent: dict[str, list[str]] = {}

    @staticmethod
    def tokenize(text: str) -> list[int]:
        return [ord(c) for c in text]

    def replies(self, task) -> list[str]:
        finish = render_action("finish", {"message": "done"})
        if task.id != SOLVED:
            return [render_action("bash", {"cmd": "ls /app"}), finish]
        return [
            render_action("bash", {"cmd": "mkdir -p /tmp/s && cd /tmp/s && export SOL=solve.sh"}),
            render_action("file", {"action": "write", "file_path": "solve.sh", "content": task.solution}),
            render_action("bash", {"cmd": 'test -f "$SOL" && cp "$SOL" /tmp/run.sh && cd /app && bash /tmp/run.sh'}),
            finish,
        ]  # fmt: skip

    def __call__(self, request: RecordedRequest) -> str:
        messages = request.body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        task = next(t for t in self.tasks if t.instruction.strip()[:80] in first)
        turn = sum(m["role"] == "assistant" for m in messages)
        reply = self.replies(task)[turn]
        self.sent.setdefault(task.id, []).append(reply)
        return reply


def test_scripted_policy_same_outcomes_in_both_harnesses_and_exact_token_ids(
    harbor_image, tasks, tmp_path
):
    script = Script(tasks)
    with LLMServer(script, tokenize=Script.tokenize) as server:
        policy = f"openai:{server.openai_base_url}+loopback"
        ours = run_eval(tasks, config(policy), tmp_path / "tbrl", progress=False)
        script.sent.clear()
        theirs = run_harbor(
            tasks, config(policy), tmp_path / "harbor", log=lambda _: None,
            agent_kwargs={"token_ids": "true"},
        )  # fmt: skip
    outcomes = {task_id: task_id == SOLVED for task_id in TASK_IDS}
    assert {t.task_id: t.resolved for t in ours.trials} == outcomes
    assert {t.task_id: t.resolved for t in theirs.trials} == outcomes
    assert [t.turns for t in theirs.trials] == [t.turns for t in ours.trials]
    assert compare_runs(tmp_path / "harbor", tmp_path / "tbrl").difference == 0.0

    for trial in theirs.trials:
        harbor_trial = (tmp_path / "harbor" / trial.trajectory).parents[1] / "result.json"
        context = json.loads(harbor_trial.read_text())["agent_result"]
        (details,) = context["rollout_details"]
        sent = [Script.tokenize(text) for text in script.sent[trial.task_id]]
        assert details["completion_token_ids"] == sent
        prompts = details["prompt_token_ids"]
        for before, completion, after in zip(prompts, sent, prompts[1:]):
            assert after[: len(before) + len(completion)] == before + completion  # one history
        assert context["n_output_tokens"] == sum(len(ids) for ids in sent)


def test_a_run_past_its_time_limit_is_stopped_and_leaves_no_container(
    harbor_image, tasks, tmp_path, docker_client
):
    sleeper = render_action("bash", {"cmd": "sleep 300", "timeout_secs": 400})
    with LLMServer(default=sleeper) as server:
        policy = f"openai:{server.openai_base_url}+loopback"
        t0 = time.monotonic()
        with pytest.raises(HarborRunError, match="did not finish within 40 s"):
            run_harbor(tasks[:1], config(policy), tmp_path, log=lambda _: None, timeout_s=40)
    assert time.monotonic() - t0 < 150  # 40 s, then Harbor's stop (30 s) and the cleanup
    left = docker_client.containers.list(all=True, filters={"label": COMPOSE_DIR_LABEL})
    assert not [c for c in left if str(tmp_path) in c.labels[COMPOSE_DIR_LABEL]]
    harbors = docker_client.containers.list(all=True, filters={"label": "tbrl.harbor"})
    assert not [c for c in harbors if str(tmp_path) in json.dumps(c.attrs["Mounts"])]
