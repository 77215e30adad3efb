"""The LLM pipeline end to end against the loopback server (real Anthropic SDK, real wire
format): one good task, one broken then repaired, one rejected; budget stop and resume.
Paths that end before validation run without Docker."""

from __future__ import annotations

import json

import pytest

from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
from tbrl_lib.synth.llm import AnthropicLLM
from tbrl_lib.synth.pipeline import PipelineConfig, run_pipeline
from tests.synth import scripted_llm

REQUESTS = [("text-processing", "easy"), ("file-operations", "easy"), ("debugging", "easy")]


async def must_not_validate(task):
    raise AssertionError(
        f"validation reached for {task.id}; the pipeline should have stopped before"
    )


def run(server, out, validator, requests=REQUESTS, **kwargs):
    llm = AnthropicLLM("claude-sonnet-4-6", base_url=server.base_url, api_key="test", max_retries=0)
    config = PipelineConfig(out_dir=str(out), requests=requests, **{"max_rounds": 3, **kwargs})
    return run_pipeline(config, llm, validator, progress=False)


def tools_called(server):
    return [r.body["tool_choice"]["name"] for r in server.requests]


@pytest.mark.docker
@pytest.mark.slow
def test_good_repaired_and_rejected_tasks_with_budget_stop_and_resume(tmp_path, task_validator):
    out = tmp_path / "run"
    # 1) A budget that one proposal already exhausts: the run stops, state is kept.
    with LLMServer(scripted_llm.answer) as server:
        first = run(server, out, must_not_validate, budget_usd=1e-6, concurrency=1)
    assert first["stopped"] and "budget" in first["stopped"]
    assert first["counts"]["pending"] == 3 and first["cost"]["calls"] == 1
    # 2) Resume with money: every slot finishes; the first slot's proposal is not asked again.
    with LLMServer(scripted_llm.answer) as server:
        report = run(server, out, task_validator, budget_usd=5.0, concurrency=3)
    assert tools_called(server).count("propose_task") == 2
    slots = {s["slot"].split("-", 1)[1]: s for s in report["slots"]}
    good, repaired, rejected = (
        slots["text-processing-easy"],
        slots["file-operations-easy"],
        slots["debugging-easy"],
    )
    assert (good["status"], good["rounds"]) == ("accepted", 1)
    assert (repaired["status"], repaired["rounds"]) == ("accepted", 3)
    assert rejected["status"] == "rejected" and rejected["rounds"] == 3
    assert any("image build failed" in r for r in rejected["reasons"]), rejected["reasons"]
    # The repaired task's history: validation failed, then the critic, then accepted.
    state = json.loads((out / "state" / "0001-file-operations-easy.json").read_text())
    outcomes = [h["outcome"] for h in state["history"]]
    assert outcomes == [
        "proposed",
        "built",
        "validation failed",
        "built",
        "validated",
        "critic found issues",
        "built",
        "validated",
        "accepted",
    ]
    # Accepted tasks are Harbor dirs; the rejected one is kept with its last build.
    assert sorted(p.name for p in (out / "accepted").iterdir()) == [
        "llm-0000-text-processing-easy",
        "llm-0001-file-operations-easy",
    ]
    assert (out / "rejected" / "llm-0002-debugging-easy" / "tests" / "test_outputs.py").exists()
    # Cost report: per-role totals add up, per-slot costs add up to the run's spend.
    cost = report["cost"]
    assert cost["spent_usd"] > 0 and set(cost["by_role_usd"]) == {"proposer", "builder", "critic"}
    assert sum(s["cost_usd"] for s in report["slots"]) == pytest.approx(
        first["cost"]["spent_usd"] + cost["spent_usd"], abs=1e-5
    )
    # 3) Resuming a finished run asks nothing and reports the same outcome.
    with LLMServer([]) as server:
        again = run(server, out, must_not_validate)
    assert server.requests == [] and again["counts"] == report["counts"]


def _build_with_dockerfile(dockerfile: str):
    def answer(request):
        if request.body["tool_choice"]["name"] == "propose_task":
            return Reply(json=scripted_llm.PROPOSALS["text-processing"])
        return Reply(json={**scripted_llm.GOOD, "dockerfile": dockerfile})

    return answer


def test_unusable_builds_are_sent_back_and_then_rejected(tmp_path):
    with LLMServer(_build_with_dockerfile("FROM ubuntu:24.04\nRUN apt-get update\n")) as server:
        report = run(server, tmp_path, must_not_validate, requests=REQUESTS[:1], max_rounds=2)
    slot = report["slots"][0]
    assert slot["status"] == "rejected" and slot["rounds"] == 2
    assert "dockerfile: the first instruction must be `FROM" in slot["reasons"][0]
    builds = [r for r in server.requests if r.body["tool_choice"]["name"] == "build_task"]
    assert "dockerfile: the first instruction" in builds[1].body["messages"][0]["content"]


def test_near_duplicates_of_existing_tasks_are_rejected(tmp_path):
    from tbrl_lib.synth.roles import spec_to_task
    from tbrl_lib.tasks.model import Difficulty

    existing = spec_to_task(
        scripted_llm.GOOD,
        "already-there",
        "text-processing",
        Difficulty.easy,
        "Count lines",
        "test",
    )
    with LLMServer(scripted_llm.answer) as server:
        llm = AnthropicLLM("claude-sonnet-4-6", base_url=server.base_url, api_key="test")
        config = PipelineConfig(out_dir=str(tmp_path), requests=REQUESTS[:1])
        report = run_pipeline(config, llm, must_not_validate, existing=[existing], progress=False)
        proposal_prompt = server.requests[0].body["messages"][0]["content"]
    assert "- Count lines" in proposal_prompt  # the proposer is told what exists
    assert report["slots"][0]["status"] == "rejected"
    assert "near-duplicate of already-there" in report["slots"][0]["reasons"][0]


def test_api_failures_leave_the_slot_pending_with_the_error(tmp_path):
    with LLMServer([Reply.server_error()]) as server:
        report = run(server, tmp_path, must_not_validate, requests=REQUESTS[:1])
    slot = report["slots"][0]
    assert slot["status"] == "pending" and "InternalServerError" in slot["errors"][0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_rounds": 0}, "max_rounds must be >= 1"),
        ({"concurrency": 0}, "concurrency must be >= 1"),
        ({"requests": [("Data Stuff", "easy")]}, "requests\\[0\\]: category 'Data Stuff'"),
        ({"requests": [("data", "trivial")]}, "'trivial' is not a valid Difficulty"),
    ],
)
def test_bad_config_says_what_is_wrong(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        PipelineConfig(**{"out_dir": str(tmp_path), "requests": REQUESTS, **kwargs})


def test_infrastructure_errors_are_retried_not_blamed_on_the_builder(tmp_path):
    from tbrl_lib.evaluate.validate import ValidationResult

    calls = []

    async def engine_down(task):
        calls.append(task.id)
        result = ValidationResult(task.id, task.difficulty.value, task.category)
        result.infra("sandbox: the Docker daemon went away")
        return result

    with LLMServer(scripted_llm.answer) as server:
        report = run(server, tmp_path, engine_down, requests=REQUESTS[:1])
    slot = report["slots"][0]
    assert len(calls) == 2 and slot["status"] == "pending" and slot["rounds"] == 1
    assert "infrastructure errors 2 times" in slot["errors"][0]
    assert tools_called(server).count("build_task") == 1  # no repair round was spent
