"""The trajectory viewer renders every turn (thinking, actions, outputs, timings) and its
buttons step through them."""

from __future__ import annotations

from tbrl_lib.agent.trajectory import Termination, ToolCall, Trajectory, Turn
from tbrl_lib.viewers.viewer import TrajectoryViewer, turn_html


def _traj() -> Trajectory:
    turns = [
        Turn(
            index=1,
            assistant="<think>\nplan <b>it</b>\n</think>\n<bash>\ncmd: ls\n</bash>",
            calls=[ToolCall(kind="bash", output="main.py", seconds=0.25)],
            policy_seconds=1.5,
            prompt_tokens=900,
            completion_tokens=40,
        ),
        Turn(
            index=2,
            assistant="<file>\naction: read\n</file>",
            calls=[
                ToolCall(
                    kind="parse_error", output="[ERROR] field 'file_path' is missing", ok=False
                )
            ],
        ),
    ]
    return Trajectory(
        task_id="demo",
        policy="scripted",
        messages=[],
        turns=turns,
        termination=Termination.max_turns,
        termination_message="reached 2 turns",
    )


def test_turn_html_shows_thinking_actions_outputs_and_timings_escaped():
    html = turn_html(_traj(), 0)
    assert "plan &lt;b&gt;it&lt;/b&gt;" in html  # thinking shown, escaped
    assert "cmd: ls" in html and "main.py" in html and "bash - 0.25s" in html
    assert "policy 1.50s" in html and "prompt 900" in html
    assert "(failed)" in turn_html(_traj(), 1)


def test_turn_html_shows_each_call_action_and_ok_flag():
    traj = _traj()
    traj.turns[0].calls[0].action = {"tag": "bash", "fields": {"cmd": "ls -la", "block": True}}
    html = turn_html(traj, 0)
    assert "action: bash" in html and "cmd: ls -la" in html and "block: true" in html
    assert "bash - 0.25s (ok)" in html


def test_viewer_buttons_step_and_clamp():
    viewer = TrajectoryViewer(_traj())
    assert "Turn 1" in viewer.body.value and "max_turns" in viewer.widget.children[0].value
    viewer.next.click()
    assert viewer.slider.value == 1 and "Turn 2" in viewer.body.value
    viewer.next.click()
    assert viewer.slider.value == 1  # clamped at the last turn
    viewer.prev.click()
    assert "Turn 1" in viewer.body.value
