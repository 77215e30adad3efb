"""Oracle demonstrations: real rollouts whose ids are exactly what the chat renderer gives
generation, written to Parquet for SFT."""

from __future__ import annotations

import asyncio

import pytest


@pytest.mark.docker
def test_teacher_rollout_is_token_exact_and_solves(tmp_path, docker_client, base_image):
    from datasets import Dataset
    from transformers import AutoTokenizer

    from tbrl_lib.models.tiny_corpus import build_tiny_model
    from tbrl_lib.policies.chat import TokenChat
    from tbrl_lib.rewards.judges import make_judge
    from tbrl_lib.synth.generate import make_task
    from tbrl_lib.train.warm_start.demos import demo_rows, record_demos, write_demos

    tok = AutoTokenizer.from_pretrained(str(build_tiny_model()))  # cached under outputs/models
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


def test_weaker_teacher_slips_at_its_accuracy_by_writing_to_the_wrong_folder():
    from tbrl_lib.train.heldout.split import training_tasks
    from tbrl_lib.train.warm_start.demos import ShortOracle, demo_teachers

    tasks = training_tasks("write_word", 200, distinct=False)
    teachers = demo_teachers(tasks, 0.5, seed=3)
    wrong = [(t, task) for t, task in zip(teachers, tasks, strict=True) if t.solution]
    assert all(isinstance(t, ShortOracle) for t in teachers)
    assert 70 <= len(wrong) <= 130  # ~half, from a seeded draw
    for teacher, task in wrong:  # the same word and file name, in /tmp instead of /app
        assert teacher.solution == task.solution.strip().replace("> /app/", "> /tmp/")
    assert demo_teachers(tasks, 0.5, seed=3)[5].solution == teachers[5].solution
    assert all(t.solution is None for t in demo_teachers(tasks, 1.0))
    with pytest.raises(ValueError, match="accuracy 1.5"):
        demo_teachers(tasks, 1.5)


def test_a_slip_moves_each_lines_output_to_tmp_and_needs_one():
    from tbrl_lib.train.warm_start.demos import slipped

    assert slipped("echo hi > /app/a.txt\n") == "echo hi > /tmp/a.txt"
    assert slipped("mkdir -p /app\nsort x >>out.txt") == "mkdir -p /app\nsort x >>/tmp/out.txt"
    assert slipped("ls /app") is None  # nothing to slip: the teacher stays right
    assert slipped("echo x > /tmp/a") is None  # already where the slip would put it


@pytest.mark.docker
def test_a_weaker_teachers_mistake_is_recorded_as_a_wrong_demonstration(docker_client, base_image):
    from transformers import AutoTokenizer

    from tbrl_lib.models.tiny_corpus import build_tiny_model
    from tbrl_lib.rewards.judges import make_judge
    from tbrl_lib.synth.generate import make_task
    from tbrl_lib.train.warm_start.demos import ShortOracle, demo_rows, record_demos, slipped

    tok = AutoTokenizer.from_pretrained(str(build_tiny_model()))
    task = make_task("write_word", 1, "easy")
    results = asyncio.run(
        record_demos(
            [task, task],
            tok,
            judge=make_judge("rule"),
            teachers=[ShortOracle(), ShortOracle(slipped(task.solution))],
        )
    )
    assert [r.tests.score for r in results] == [1.0, 0.0]  # /tmp/<file>: no credit
    assert len(demo_rows(results)) == 1  # by default only right demonstrations
    rows = demo_rows(results, min_reward=0.0)
    assert [r["tests_score"] < 1.0 for r in rows] == [False, True]


@pytest.mark.parametrize(
    ("template", "thinking", "thinks", "expected"),
    [
        ("QWEN3", True, True, "<think>\n{why}\n</think>\n\n{action}"),
        ("QWEN3", True, False, "{action}"),
        ("QWEN3", False, True, "{action}"),  # off: the prompt closed the block; no reasoning
        ("QWEN3_THINKING", True, True, "{why}\n</think>\n\n{action}"),
        ("QWEN3_THINKING", True, False, "</think>\n\n{action}"),  # the open block is closed
        ("SMOLLM2", True, True, "{action}"),  # a template without thinking
    ],
)
def test_demonstration_replies_take_the_chats_thinking_shape(template, thinking, thinks, expected):
    """A teacher's reply, tokenised by the one renderer, in the shape generation will have
    under this template and `enable_thinking`; a teacher's own `<think>` block is kept only
    when it thinks."""
    from transformers import AutoTokenizer

    from tbrl_lib.agent.actions import render_action
    from tbrl_lib.agent.prompts import initial_messages
    from tbrl_lib.models.tiny_corpus import build_tiny_model
    from tbrl_lib.policies.base import Conversation
    from tbrl_lib.policies.chat import TokenChat
    from tbrl_lib.synth.generate import make_task
    from tbrl_lib.train.warm_start.demos import ShortOracle, TeacherPolicy
    from tests.policies import chat_templates

    tok = AutoTokenizer.from_pretrained(str(build_tiny_model()))
    tok.chat_template = getattr(chat_templates, template)
    task = make_task("write_word", 1000, "easy")
    conv = Conversation(task=task, messages=initial_messages(task))
    teacher = ShortOracle()
    policy = TeacherPolicy(teacher, TokenChat(tok, thinking), 4096, thinks=thinks)
    gen = asyncio.run(policy.generate(conv, 256))
    action = render_action("bash", {"cmd": task.solution.strip()})
    assert gen.text == expected.format(why=teacher.reasoning(conv), action=action)
    assert gen.completion_ids == tok.encode(gen.text, add_special_tokens=False) + [tok.eos_token_id]
