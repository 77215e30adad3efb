"""`run_episode(task, policy, sandbox, limits)`: the agent loop, start to end.

Each turn: ask the policy for a reply (within the time and token budget left), parse its
tags, run the actions in order, send their outputs back as the next user message. The loop
ends by raising `EpisodeEnd` with a `Termination` reason and a message; infrastructure
failures end it as `infra_error`, a sandbox the agent broke as `sandbox_broken` (scored), a
sandbox limit as `time_limit`, `resource_limit` or `storage_limit` with the limit recorded.
The trajectory is returned in every case but one: any other exception is a bug and
propagates. The episode never decides the score: the verifier runs the tests afterwards,
also for rollouts that stopped on a limit.

The time limit and a generating policy: a policy that `stops_at_deadline` (token policies)
is given the moment the time runs out (`Conversation.deadline`) and `STOP_GRACE_S` more to
hand back the reply it has by then; that reply is recorded as the last turn, unrun, and the
episode ends as `time_limit`. Any other policy is cancelled at the deadline (no turn).
"""

from __future__ import annotations

import asyncio
import time

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.parser import ParseError, parse_actions
from tbrl_lib.agent.prompts import initial_messages
from tbrl_lib.agent.tool_base import ToolResult
from tbrl_lib.agent.toolbox import Toolbox, format_observation, monotonic_deadline
from tbrl_lib.agent.trajectory import Termination, ToolCall, Trajectory, Turn
from tbrl_lib.policies.base import ContextOverflow, Conversation, Policy, PolicyError
from tbrl_lib.sandbox.base import Sandbox, SandboxError, SandboxLimitExceeded
from tbrl_lib.tasks.model import Task

STOP_GRACE_S = 30.0
"""How long after the deadline a policy that stops there may take to return (it stops between
two tokens; a long prompt's forward pass cannot be cut)."""


class EpisodeEnd(Exception):
    def __init__(self, reason: Termination, message: str) -> None:
        super().__init__(message)
        self.reason = reason


async def run_episode(
    task: Task, policy: Policy, sandbox: Sandbox, limits: EpisodeLimits | None = None
) -> Trajectory:
    limits = limits or EpisodeLimits()
    started = time.monotonic()
    time_left = monotonic_deadline(limits.time_limit_for(task.limits.agent_timeout_sec))
    toolbox = Toolbox(sandbox, limits.tools, time_left)
    traj = Trajectory(
        task_id=task.id,
        policy=policy.name,
        messages=initial_messages(task, limits),
        limits=limits.model_dump(mode="json"),
    )
    conversation = Conversation(task=task, messages=traj.messages)
    error_turns = 0
    try:
        while True:
            error_turns = await _turn(
                traj, conversation, policy, toolbox, limits, time_left, error_turns
            )
    except EpisodeEnd as end:
        traj.termination, traj.termination_message = end.reason, str(end)
    except SandboxLimitExceeded as exc:
        traj.termination = {
            "wall_clock": Termination.time_limit,
            "pids": Termination.resource_limit,
            "memory": Termination.resource_limit,
            "storage": Termination.storage_limit,
        }.get(exc.kind, Termination.infra_error)
        traj.termination_message, traj.error_kind = str(exc), exc.kind
        traj.limit_exceeded = exc.record()
    except SandboxError as exc:  # blame by cause: see tbrl_lib.sandbox.base
        traj.termination = Termination.infra_error if exc.infra else Termination.sandbox_broken
        traj.termination_message, traj.error_kind = str(exc), exc.kind
    except PolicyError as exc:
        traj.termination, traj.termination_message = Termination.infra_error, str(exc)
        traj.error_kind = "policy"
    finally:
        traj.todos = [vars(item).copy() for item in toolbox.todo.items]
        traj.notes = list(toolbox.scratchpad.notes)
        traj.wall_seconds = time.monotonic() - started
    return traj


async def _turn(
    traj: Trajectory,
    conversation: Conversation,
    policy: Policy,
    toolbox: Toolbox,
    limits: EpisodeLimits,
    time_left,
    error_turns: int,
) -> int:
    """One reply and its actions; returns the updated count of error-only turns in a row."""
    if len(traj.turns) >= limits.max_turns:
        raise EpisodeEnd(Termination.max_turns, f"reached {limits.max_turns} turns")
    budget = limits.max_total_tokens - traj.total_tokens
    if budget <= 0:
        raise EpisodeEnd(
            Termination.token_budget, f"the conversation reached {traj.total_tokens} tokens"
        )
    if time_left() <= 0:
        raise EpisodeEnd(Termination.time_limit, "the episode's time limit passed")
    conversation.token_ids, conversation.turn = traj.token_ids, len(traj.turns)
    t0 = time.monotonic()
    conversation.deadline = t0 + time_left()
    grace = STOP_GRACE_S if getattr(policy, "stops_at_deadline", False) else 0.0
    try:
        gen = await asyncio.wait_for(
            policy.generate(conversation, min(limits.max_tokens_per_turn, budget)),
            timeout=max(time_left(), 0.001) + grace,
        )
    except TimeoutError as exc:
        raise EpisodeEnd(
            Termination.time_limit, "the time limit passed while the policy was generating"
        ) from exc
    except ContextOverflow as exc:
        raise EpisodeEnd(Termination.context_overflow, str(exc)) from exc
    turn = Turn(
        index=len(traj.turns) + 1,
        assistant=gen.text,
        policy_seconds=time.monotonic() - t0,
        prompt_tokens=gen.prompt_tokens,
        completion_tokens=gen.completion_tokens,
        finish_reason=gen.finish_reason,
    )
    traj.turns.append(turn)
    traj.messages.append({"role": "assistant", "content": gen.text})
    traj.add_generation(gen)
    if gen.finish_reason == "time_limit":
        raise EpisodeEnd(
            Termination.time_limit,
            f"the time limit passed while the policy was generating ({gen.completion_tokens} "
            "tokens so far, kept as the last turn, not run)",
        )

    parsed = parse_actions(gen.text)
    if not parsed.items:
        raise EpisodeEnd(Termination.no_action, "the reply contained no action tag")
    t1 = time.monotonic()
    entries: list[tuple] = []
    finished = False
    for item in parsed.items:
        if isinstance(item, ParseError):
            entries.append((item, None))
            turn.calls.append(ToolCall(kind="parse_error", output=item.message, ok=False))
        elif finished:
            turn.calls.append(
                ToolCall(
                    kind=item.kind, action=item.record(), output="not run: after finish", ok=False
                )
            )
        else:
            t = time.monotonic()
            result: ToolResult = await toolbox.run(item)
            entries.append((item, result))
            turn.calls.append(
                ToolCall(
                    kind=item.kind,
                    action=item.record(),
                    output=result.output,
                    ok=result.ok,
                    seconds=time.monotonic() - t,
                    truncated_chars=result.truncated_chars,
                )
            )
            finished = result.finished
    turn.tools_seconds = time.monotonic() - t1
    turn.observation = format_observation(entries)
    traj.messages.append({"role": "user", "content": turn.observation})

    if finished:
        raise EpisodeEnd(Termination.finished, "the model wrote <finish>")
    error_turns = error_turns + 1 if not parsed.actions else 0
    if error_turns >= limits.max_parse_error_turns:
        raise EpisodeEnd(
            Termination.parse_error_streak,
            f"{error_turns} replies in a row had only malformed actions",
        )
    return error_turns
