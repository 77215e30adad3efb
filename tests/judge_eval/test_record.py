"""Recording a judge case from a real episode (through `run_rollout`): the files a judge case
needs, the agent's system prompt left out, and the index updated in place."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from tbrl_lib.agent.scripted import OraclePolicy
from tbrl_lib.judge_eval.record import record_case
from tests.agent.conftest import toy_task


@pytest.mark.docker
def test_a_recorded_episode_becomes_a_judge_case(base_image, tmp_path):
    task = toy_task(solution="echo 42 > /app/answer.txt\n", task_id="record-toy")
    case = asyncio.run(
        record_case(
            task,
            OraclePolicy(),
            tmp_path,
            "ep_oracle_toy",
            (0.6, 0.95),
            "oracle on the toy task",
            ["plans", "verifies"],
            rationale="acted out",
        )
    )
    messages = json.loads((case / "messages.json").read_text())
    assert messages[0]["role"] == "user" and "42" in messages[0]["content"]
    assert all(m["role"] != "system" for m in messages) and messages[-1]["role"] == "user"
    assert (case / "dockerfile").read_text().startswith("FROM tbrl/base")
    index = yaml.safe_load((tmp_path / "cases.yaml").read_text())["cases"]
    assert [c["id"] for c in index] == ["ep_oracle_toy"]
    assert "termination finished" in index[0]["source"] and index[0]["rationale"] == "acted out"
