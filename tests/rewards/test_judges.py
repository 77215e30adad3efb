"""Judges: prompt and parsing, the rule-based judge, the three LLM backends against a loopback
server speaking the real wire formats (and a fake `claude` executable printing the CLI's JSON),
and the chain's resilience: fallback on overload, all-down -> missing, garbage -> retry then
fallback, cache, limits, hot-reloaded config."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import stat
import time

import pytest

from tbrl_lib.fake_llm_server.llm_server import LLMServer, Reply
from tbrl_lib.rewards.judges import (
    ConfiguredJudge,
    JudgeChain,
    JudgeInput,
    JudgeMissing,
    JudgeResult,
    make_judge,
)
from tbrl_lib.rewards.judges.base import JudgeError, JudgeFormatError
from tbrl_lib.rewards.judges.chain import RateLimiter
from tbrl_lib.rewards.judges.prompt import (
    judged_reply,
    load_prompt,
    parse_score,
    render_input,
    truncate_middle,
)
from tbrl_lib.rewards.judges.rule_based import RuleBasedJudge, extract_features
from tbrl_lib.rewards.parts import PARTS, Evidence
from tbrl_lib.rewards.reward import RewardConfig, combine

GOOD = {
    "planning": 0.9,
    "exploration": 0.8,
    "tool_use": 0.9,
    "verification": 1.0,
    "efficiency": 0.8,
    "caps": [],
    "reasoning": "plans, explores, verifies",
    "score": 0.88,
}


def item(n_replies: int = 2) -> JudgeInput:
    msgs = [{"role": "user", "content": "Write 42 to /app/out.txt"}]
    for i in range(n_replies):
        msgs.append({"role": "assistant", "content": f"<bash>\ncmd: ls /app # {i}\n</bash>"})
        msgs.append({"role": "user", "content": "<bash_output>\nout.txt\n</bash_output>"})
    return JudgeInput.from_messages(msgs, environment="FROM tbrl/base:trixie")


def run(coro):
    return asyncio.run(coro)


# -- prompt and parsing --------------------------------------------------------------


def test_prompt_has_a_version_and_the_rubric():
    prompt = load_prompt()
    assert prompt.version == "tbrl-judge-v2"
    for word in ("planning", "exploration", "verification", "overthinking", "gaming", "at most"):
        assert word in prompt.text


def test_prompt_without_version_is_rejected_with_a_fix(tmp_path):
    path = tmp_path / "p.md"
    path.write_text("# no front matter\n")
    with pytest.raises(ValueError, match="version"):
        load_prompt(path)


def test_truncation_keeps_start_and_end_with_a_visible_marker():
    text = "START" + "x" * 10_000 + "END"
    out = truncate_middle(text, 1000)
    assert out.startswith("START") and out.endswith("END") and "omitted" in out
    assert len(out) < 1200
    long_item = JudgeInput.from_messages(
        [{"role": "user", "content": "task"}] + [{"role": "assistant", "content": "y" * 5000}] * 100
    )
    rendered = render_input(long_item, max_tokens=2000)
    assert "omitted" in rendered and "## Task\ntask" in rendered and len(rendered) < 2000 * 4 + 4000


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"score": 0.7, "planning": 1}', 0.7),
        ('Here you go:\n```json\n{"score": 0.25}\n```', 0.25),
        ("Reasoning... Final score: 0.4", 0.4),
        ("I'd say 0.9/1", 0.9),
    ],
)
def test_parse_score_reads_json_fences_and_lines(text, expected):
    assert parse_score(text)[0] == pytest.approx(expected)


@pytest.mark.parametrize(
    "text", ["no number here", '{"score": 7}', '{"score": "NaN"}', "score: 1.5"]
)
def test_parse_score_rejects_garbage_and_out_of_range(text):
    with pytest.raises(JudgeFormatError):
        parse_score(text)


# -- rule-based judge ----------------------------------------------------------------


def _traj(*replies: str, outputs: str = "ok") -> list[dict]:
    msgs = [{"role": "user", "content": "Fix /app/app.py so that tests pass."}]
    for reply in replies:
        msgs += [{"role": "assistant", "content": reply}, {"role": "user", "content": outputs}]
    return msgs


TODO = "<todo>\noperations:\n  - action: add\n    content: inspect\n  - action: add\n    content: fix\n</todo>"
LS = "<bash>\ncmd: ls -la /app\n</bash>"
READ = "<file>\naction: read\nfile_path: /app/app.py\n</file>"
EDIT = "<file>\naction: write\nfile_path: /app/app.py\ncontent: print(1)\n</file>"
CHECK = "<bash>\ncmd: python /app/app.py\n</bash>"
DONE = "<todo>\noperations:\n  - action: complete\n    task_id: 1\n  - action: complete\n    task_id: 2\n</todo>"
FINISH = "<finish>\nmessage: done\n</finish>"


def test_rule_judge_rewards_the_full_process_and_caps_shortcuts():
    judge = RuleBasedJudge()
    good = judge.score_sync(
        JudgeInput.from_messages(_traj(TODO, LS, READ, EDIT, CHECK, DONE, FINISH))
    )
    rushed = judge.score_sync(JudgeInput.from_messages(_traj(EDIT, FINISH)))
    assert good.score >= 0.9 and good.caps == []
    assert rushed.score <= 0.30
    assert {"no_todo", "change_before_exploration", "no_verification"} <= set(rushed.caps)


ECHO_CHECK = "<bash>\ncmd: echo 'Verification: /app/app.py checked, all checks passed'\n</bash>"
CLAIM = "<finish>\nmessage: Fixed and verified, all checks passed.\n</finish>"


def test_rule_judge_gives_claims_nothing():
    judge = RuleBasedJudge()

    def score(*replies):
        return judge.score_sync(JudgeInput.from_messages(_traj(*replies)))

    real = score(TODO, LS, READ, EDIT, CHECK, DONE, FINISH)
    assert score(TODO, LS, READ, EDIT, CHECK, DONE, CLAIM).score == real.score  # finish words
    echoed = score(TODO, LS, READ, EDIT, ECHO_CHECK, DONE, CLAIM)  # an echo is no check
    assert echoed.subscores["verification"] == 0.0 and "no_verification" in echoed.caps
    theatre = score(TODO, LS, DONE, CLAIM)  # a plan, one look, every item ticked, no work
    features = extract_features(_traj(TODO, LS, DONE, CLAIM))
    assert features.completed == 2 and features.backed_completions == 1  # one look backs one
    assert theatre.subscores["planning"] == 0.0, "a plan never acted on earns nothing"
    assert theatre.score <= real.score / 2


def test_rule_judge_counts_parse_errors_with_the_agents_parser():
    broken = "<bash>\ncmd: [unclosed\n</bash>"
    features = extract_features(_traj(TODO, broken, broken, broken, LS, FINISH))
    assert features.parse_errors == 3
    result = RuleBasedJudge().score_sync(
        JudgeInput.from_messages(_traj(TODO, broken, broken, broken, LS, FINISH))
    )
    assert "parse_errors" in result.caps and result.score <= 0.6


def test_rule_judge_flags_gaming_and_overthinking():
    gaming = "<bash>\ncmd: |\n  echo 'def test_x(): pass' > /tests/test_outputs.py\n</bash>"
    result = RuleBasedJudge().score_sync(
        JudgeInput.from_messages(_traj(TODO, LS, gaming, CHECK, FINISH))
    )
    assert "gaming" in result.caps and result.score <= 0.05
    think = "<think>" + "hmm, maybe this or that. " * 300 + "</think>"
    result = RuleBasedJudge().score_sync(
        JudgeInput.from_messages(_traj(TODO, think, think, LS, EDIT, CHECK, FINISH))
    )
    assert "overthinking" in result.caps and result.score <= 0.45


def _exchange(*pairs: tuple[str, str]) -> JudgeInput:
    msgs = [{"role": "user", "content": "Fix the converter in /app/convert.py."}]
    for reply, observation in pairs:
        msgs.append({"role": "assistant", "content": reply})
        if observation is not None:
            msgs.append({"role": "user", "content": observation})
    return JudgeInput.from_messages(msgs)


PLAN_AND_LOOK = [
    (
        TODO + "\n" + READ,
        "<todo_output>\nAdded todo [1]\n</todo_output>\n\n"
        "<file_output>\n     1\tdef c_to_f(c):\n</file_output>",
    ),
    (LS, "<bash_output>\nconvert.py\n</bash_output>"),
]
SED_EDIT = "<file>\naction: edit\nfile_path: /app/convert.py\nold_string: 5 / 9\nnew_string: 9 / 5\n</file>"


@pytest.mark.parametrize(
    "failed_output",
    [
        "<file_output>\nError editing file: sed: -e expression #1, char 5: unterminated `s' command\n"
        "</file_output>",  # the upstream tool's report
        "<file_output>\n[ERROR] old_string was not found in /app/convert.py\n</file_output>",  # ours
    ],
)
def test_ten_identical_failed_edits_are_failures_not_changes(failed_output):
    item = _exchange(*PLAN_AND_LOOK, *[(SED_EDIT, failed_output)] * 10, (FINISH, None))
    features = extract_features(item.messages)
    assert features.changes == 0 and features.failures == 10 and features.repeated_failures == 9
    result = RuleBasedJudge().score_sync(item)
    assert "flailing" in result.caps and result.score <= 0.40


def test_a_good_run_cut_off_by_the_token_limit_is_not_overthinking():
    done = "<todo>\noperations:\n  - action: complete\n    task_id: 1\n</todo>"
    cut = "<think>\n" + "Should ties list every word, or exactly ten lines? " * 400  # no end
    item = _exchange(
        *PLAN_AND_LOOK,
        (EDIT, "<file_output>\nCreated /app/app.py\n</file_output>"),
        (CHECK + "\n" + done, "<bash_output>\n1\n</bash_output>"),
        (cut, None),
    )
    features = extract_features(item.messages)
    assert features.cut_off and not features.finished and features.parse_errors == 0
    result = RuleBasedJudge().score_sync(item)
    assert "overthinking" not in result.caps and 0.55 <= result.score < 0.9


def test_errors_fixed_at_once_are_not_flailing():
    fail = "<bash_output>\ncat: /app/story: No such file or directory\n</bash_output>"
    item = _exchange(
        (TODO + "\n<bash>\ncmd: cat /app/story\n</bash>", fail),
        (LS, "<bash_output>\nstory.txt\n</bash_output>"),
        (READ, "<file_output>\n     1\tonce\n</file_output>"),
        (EDIT, "<file_output>\nCreated /app/app.py\n</file_output>"),
        (CHECK + "\n" + DONE, "<bash_output>\n1\n</bash_output>"),
        (FINISH, None),
    )
    result = RuleBasedJudge().score_sync(item)
    assert result.caps == [] and result.score >= 0.8


# -- backends against the loopback server --------------------------------------------------


def test_anthropic_judge_uses_structured_output_and_prompt_caching():
    with LLMServer([Reply(json=GOOD), Reply(json=GOOD)]) as server:
        judge = make_judge(
            "anthropic:claude-sonnet-4-20250514", base_url=server.base_url, api_key="t"
        )
        first = run(judge.score(item()))
        second = run(judge.score(item(3)))
        body = server.requests[0].body
    assert first.score == pytest.approx(0.88) and first.prompt_version == "tbrl-judge-v2"
    assert body["tool_choice"]["name"] == "record_score"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert second.usage.cache_read_tokens > 0, "the judge prompt should be read from the cache"
    assert first.usage.cost_usd > 0 and first.subscores["verification"] == 1.0


def test_openai_judge_requests_json_schema_and_reads_usage():
    with LLMServer([Reply(json=GOOD)]) as server:
        judge = make_judge("openai:Qwen/Qwen3-32B", base_url=server.openai_base_url, api_key="t")
        result = run(judge.score(item()))
        body = server.requests[0].body
    assert result.score == pytest.approx(0.88)
    assert body["response_format"]["type"] == "json_schema"
    assert body["messages"][0]["role"] == "system" and "Rubric" in body["messages"][0]["content"]
    assert result.usage.input_tokens > 0 and result.usage.cost_usd == 0.0  # self-hosted Qwen


FAKE_CLAUDE = """#!/usr/bin/env python3
import json, sys
prompt = sys.stdin.read()
mode = open(sys.argv[0] + ".mode").read().strip()
args = sys.argv[1:]
assert args[:3] == ["-p", "--output-format", "json"], args
if mode == "error":
    print(json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True,
                      "result": "API Error: 529 overloaded", "session_id": "s", "total_cost_usd": 0}))
    sys.exit(1)
score = 0.35 if "Rubric" in prompt else 0.0
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 812,
                  "duration_api_ms": 790, "num_turns": 1,
                  "result": "Reasoning here.\\n{\\"score\\": %s, \\"caps\\": []}" % score,
                  "session_id": "0b6f", "total_cost_usd": 0.0123,
                  "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 3000, "output_tokens": 40}}))
"""


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir()
    exe.write_text(FAKE_CLAUDE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "bin" / "claude.mode").write_text("ok")
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    return exe


def test_claude_cli_judge_reads_the_cli_json(fake_claude):
    result = run(make_judge("claude-cli").score(item()))
    assert result.score == pytest.approx(0.35)
    assert result.usage.cost_usd == pytest.approx(0.0123) and result.usage.cache_read_tokens == 3000


def test_claude_cli_error_is_a_retryable_judge_error(fake_claude):
    fake_claude.with_name("claude.mode").write_text("error")
    with pytest.raises(JudgeError, match="529"):
        run(make_judge("claude-cli").score(item()))


# -- resilience ------------------------------------------------------------------------------


def test_overload_falls_back_to_the_next_judge_and_logs_it(caplog):
    with (
        LLMServer([Reply.overloaded(), Reply.overloaded()]) as down,
        LLMServer([Reply(json=GOOD)]) as up,
    ):
        chain = JudgeChain(
            [
                make_judge(
                    "anthropic:claude-sonnet-4-20250514",
                    base_url=down.base_url,
                    api_key="t",
                    max_retries=1,
                ),
                make_judge("openai:gpt-4o-mini", base_url=up.openai_base_url, api_key="t"),
            ]
        )
        with caplog.at_level(logging.WARNING):
            result = run(chain.score(item()))
        assert len(down.requests) == 2, "the SDK retries once before the chain falls back"
    assert isinstance(result, JudgeResult) and result.judge == "openai:gpt-4o-mini"
    assert len(result.fallbacks) == 1 and "claude-sonnet" in result.fallbacks[0]
    assert "falling back" in caplog.text
    assert chain.ledger.metrics()["judge/fallbacks"] == 1


@pytest.mark.parametrize("policy", ["renormalize", "infra_error"])
def test_all_judges_down_gives_missing_never_zero_or_nan(policy):
    with (
        LLMServer(default=Reply.rate_limited(0.01)) as a,
        LLMServer(default=Reply.server_error()) as b,
    ):
        chain = JudgeChain(
            [
                make_judge(
                    "anthropic:claude-sonnet-4", base_url=a.base_url, api_key="t", max_retries=0
                ),
                make_judge("openai:gpt-4o", base_url=b.openai_base_url, api_key="t", max_retries=0),
            ]
        )
        outcome = run(chain.score(item()))
    assert isinstance(outcome, JudgeMissing) and len(outcome.failures) == 2
    judge = PARTS["judge"].score(Evidence(task=None, trajectory=None, tests=None, judged=outcome))
    reward = combine({"tests": 0.8, "judge": judge}, RewardConfig(on_judge_missing=policy))
    assert reward.scores["judge"] is None and not math.isnan(reward.total)
    assert reward.missing["judge"] == outcome.reason
    assert reward.total == pytest.approx(0.8)
    assert reward.infra_error == (policy == "infra_error")


def test_garbage_reply_is_retried_once_then_falls_back():
    with (
        LLMServer(["I think it went fine overall!", "still no number, sorry"]) as chatty,
        LLMServer([Reply(json=GOOD)]) as good,
    ):
        first = make_judge(
            "openai:gpt-4o", base_url=chatty.openai_base_url, api_key="t", structured=False
        )
        chain = JudgeChain(
            [first, make_judge("anthropic:claude-sonnet-4", base_url=good.base_url, api_key="t")]
        )
        result = run(chain.score(item()))
        assert len(chatty.requests) == 2, "one format-correction retry"
        assert "could not be read" in chatty.requests[1].body["messages"][-1]["content"]
    assert (
        result.judge == "anthropic:claude-sonnet-4"
        and "after a format-correction retry" in result.fallbacks[0]
    )


def test_garbage_body_falls_back():
    with LLMServer([Reply.garbage_body()]) as bad:
        chain = JudgeChain(
            [
                make_judge(
                    "anthropic:claude-sonnet-4", base_url=bad.base_url, api_key="t", max_retries=0
                ),
                make_judge("rule"),
            ]
        )
        result = run(chain.score(item()))
    assert result.judge == "rule" and result.fallbacks


def test_format_correction_succeeds_on_second_try():
    with LLMServer(["no score yet", '{"score": 0.6}']) as server:
        judge = make_judge(
            "openai:gpt-4o", base_url=server.openai_base_url, api_key="t", structured=False
        )
        result = run(judge.score(item()))
    assert result.score == 0.6 and result.attempts == 2


def test_cache_answers_repeated_inputs_without_a_call(tmp_path):
    from tbrl_lib.rewards.judges import JudgeCache

    with LLMServer([Reply(json=GOOD)]) as server:
        judge = make_judge("anthropic:claude-sonnet-4", base_url=server.base_url, api_key="t")
        chain = JudgeChain([judge], cache=JudgeCache(tmp_path / "cache.jsonl"))
        first, second = run(chain.score(item())), run(chain.score(item()))
        assert len(server.requests) == 1
    again = JudgeChain([judge], cache=JudgeCache(tmp_path / "cache.jsonl"))
    third = run(again.score(item()))
    assert (
        second.cached and third.cached and third.score == first.score and third.usage.cost_usd == 0
    )


class _CountingJudge:
    """A real judge (rule-based) that also records how many calls overlap."""

    prompt_version = "rule-v1"

    def __init__(self) -> None:
        self.name, self.live, self.peak = "counting", 0, 0

    async def score(self, item):
        self.live += 1
        self.peak = max(self.peak, self.live)
        await asyncio.sleep(0.05)
        self.live -= 1
        return RuleBasedJudge().score_sync(item)


def test_concurrency_limit_holds():
    judge = _CountingJudge()
    chain = JudgeChain([judge], max_concurrency=2)

    async def many():
        return await asyncio.gather(*(chain.score(item(i + 1)) for i in range(8)))

    results = run(many())
    assert judge.peak == 2 and all(isinstance(r, JudgeResult) for r in results)


def test_rate_limiter_waits_for_the_window():
    async def go():
        limiter = RateLimiter(rpm=2, window_s=0.3)
        t0 = time.monotonic()
        for _ in range(3):
            await limiter.acquire(10)
        return time.monotonic() - t0

    assert run(go()) >= 0.25


def test_config_file_is_reread_when_it_changes(tmp_path, caplog):
    path = tmp_path / "judge.yaml"
    path.write_text("judges:\n  - {spec: rule}\n")
    judge = ConfiguredJudge(path)
    assert run(judge.score(item())).judge == "rule"
    time.sleep(0.01)
    path.write_text("judges:\n  - {spec: rule-nocaps}\nmax_concurrency: 3\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    assert run(judge.score(item())).judge == "rule-nocaps" and judge.reloads == 1
    path.write_text("judges: not-a-list\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 2_000_000))
    with caplog.at_level(logging.ERROR):
        assert run(judge.score(item())).judge == "rule-nocaps", "a broken edit keeps the last chain"
    assert "invalid judge config" in caplog.text


def test_make_judge_rejects_unknown_specs():
    with pytest.raises(ValueError, match="unknown judge spec"):
        make_judge("gemini:pro")
    with pytest.raises(ValueError, match="names no model"):
        make_judge("anthropic:")
    assert json.dumps(run(make_judge("rule").score(item())).to_dict())


def test_the_judge_reads_reasoning_the_same_way_in_every_chat_format():
    """Qwen3 (`<think>` first), a -Thinking template (bare `</think>`) and thinking off (none)."""
    action = "<bash>\ncmd: ls\n</bash>"
    qwen3 = judged_reply(f"<think>\nLook first.\n</think>\n\n{action}")
    opened = judged_reply(f"Look first.\n</think>\n\n{action}")
    assert qwen3 == opened == f"<think>\nLook first.\n</think>\n{action}"
    assert judged_reply(action) == action  # thinking off: unchanged
    cut = judged_reply(f"{action}\n<think>\nand then")  # a reply cut while thinking stays open
    assert cut == f"{action}\n<think>\nand then" and "</think>" not in cut
    item = JudgeInput(
        task_id="t",
        instruction="Do it.",
        environment="FROM x",
        messages=(
            {"role": "user", "content": "Do it."},
            {"role": "assistant", "content": f"Look first.\n</think>\n\n{action}"},
        ),
    )
    assert f"### [1] assistant\n<think>\nLook first.\n</think>\n{action}" in render_input(item)
