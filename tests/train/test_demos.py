"""Oracle demonstrations: real rollouts whose ids are exactly what the chat renderer gives
generation, written to Parquet for SFT."""

from __future__ import annotations

import asyncio

import pytest


@pytest.mark.docker
def test_teacher_rollout_is_token_exact_and_solves(tmp_path, docker_client, base_image):
    from datasets import Dataset
    from transformers import AutoTokenizer

    from tbrl_lib.policies.chat import TokenChat
    from tbrl_lib.policies.tiny_model import build_tiny_qwen3
    from tbrl_lib.rewards.judges import make_judge
    from tbrl_lib.synth.generate import make_task
    from tbrl_lib.train.demos import demo_rows, record_demos, write_demos

    tok = AutoTokenizer.from_pretrained(str(build_tiny_qwen3()))  # cached under outputs/models
    task = make_task("copy_answer", 1, "easy")
    [result] = asyncio.run(record_demos([task], tok, judge=make_judge("rule")))
    assert result.infra_error is None and result.resolved  # the short oracle solves it
    [row] = demo_rows([result])
    traj = result.trajectory
    # The prompt is the renderer's own first prompt, never a re-tokenisation elsewhere.
    assert row["prompt_ids"] == TokenChat(tok).prompt_ids(traj.messages[:2])
    assert len(row["completion_ids"]) == len(row["env_mask"])
    # Assistant tokens (mask 1) decode to the two replies, each closed by <|im_end|>.
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assistant = [i for i, m in zip(row["completion_ids"], row["env_mask"], strict=True) if m]
    assert assistant.count(im_end) == 2
    assert "echo" in tok.decode(assistant) and "<finish>" in tok.decode(assistant)
    path = write_demos([row], tmp_path / "demos.parquet")
    assert Dataset.from_parquet(str(path))[0]["completion_ids"] == row["completion_ids"]
