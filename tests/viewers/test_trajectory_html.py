"""A trajectory as a static page: every turn's reply, tool calls (action, output, ok flag),
the termination and the reward, readable offline (no script, no CDN)."""

from __future__ import annotations

from tbrl_lib.agent.trajectory import Termination, ToolCall, Trajectory, Turn
from tbrl_lib.rewards.reward import RewardBreakdown
from tbrl_lib.viewers.trajectory_html import trajectory_page, write_trajectory_page


def _traj() -> Trajectory:
    turns = [
        Turn(
            index=1,
            assistant="I will count the errors.\n<bash>\ncmd: grep -c ERROR app.log\n</bash>",
            calls=[
                ToolCall(
                    kind="bash",
                    action={"tag": "bash", "fields": {"cmd": "grep -c ERROR app.log"}},
                    output="42 <lines>",
                    seconds=0.1,
                )
            ],
        ),
        Turn(
            index=2,
            assistant="<file>\naction: read\n</file>",
            calls=[ToolCall(kind="parse_error", output="field 'file_path' is missing", ok=False)],
        ),
        Turn(
            index=3,
            assistant="<finish>\nmessage: done\n</finish>",
            calls=[
                ToolCall(
                    kind="finish",
                    action={"tag": "finish", "fields": {"message": "done"}},
                    output="finished",
                )
            ],
        ),
    ]
    return Trajectory(
        task_id="count-error-lines",
        policy="scripted",
        messages=[],
        turns=turns,
        termination=Termination.finished,
        termination_message="the agent called finish",
    )


def test_page_holds_every_turn_its_actions_outputs_and_ok_flags():
    page = trajectory_page(_traj())
    assert page.count("<details") == 3 and page.count("</details>") == 3
    assert "I will count the errors." in page  # the reply
    assert "cmd: grep -c ERROR app.log" in page  # an action
    assert "42 &lt;lines&gt;" in page  # a tool output, escaped
    assert "bash - 0.10s (ok)" in page and "parse_error - 0.00s (failed)" in page
    assert "Turn 2: parse_error (failed)" in page  # the collapsed line says what happened
    assert "finished" in page and "the agent called finish" in page


def test_page_is_self_contained():
    page = trajectory_page(_traj()).lower()
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_reward_breakdown_is_shown_when_given(tmp_path):
    reward = RewardBreakdown(
        total=1.0,
        scores={"tests": 1.0, "judge": None},
        weights={"tests": 0.65, "judge": 0.35},
        missing={"judge": "every judge failed"},
    )
    path = write_trajectory_page(_traj(), tmp_path / "deep" / "t.html", reward)
    page = path.read_text()
    assert "<h3>Reward</h3>" in page and "every judge failed" in page and "0.650" in page
    assert "<h3>Reward</h3>" not in trajectory_page(_traj())


def test_a_trajectory_without_turns_still_renders():
    empty = Trajectory(task_id="t", policy="noop", messages=[], termination=Termination.no_action)
    page = trajectory_page(empty)
    assert "no turns" in page and "no_action" in page
