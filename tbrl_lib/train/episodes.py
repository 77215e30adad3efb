"""One training rollout end to end: sandbox, episode, verifier -> `Rollout`.

`run_task_episode(task, policy, sandbox_config, limits)` is what `RolloutRunner` calls for
each prompt entry. It uses the same `open_sandbox`, `run_episode` and `verify` as the
evaluation harness, so training and evaluation cannot drift. An episode that ended as
`infra_error`, a verifier `infra_error`, or a policy that produced no token ids makes the
rollout an infra error (masked out of training, see `rollout.py`).

`TrainerPolicy` is the token policy that samples from the trainer's current weights: it
renders the chat (prompt, then each observation) into token ids with the tokenizer's chat
template, and asks a `BatchingGenerator` for the reply ids. What is left out: thinking-mode
switches (the template's defaults apply).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from tbrl_lib.policies.base import ContextOverflow, Conversation, Generation
from tbrl_lib.tasks.model import Task
from tbrl_lib.train.generation import BatchingGenerator
from tbrl_lib.train.rollout import Rollout


class TrainerPolicy:
    """`Policy` over the trainer's model: exact ids in, exact ids out, no re-tokenizing.

    Turn 1's env ids are the chat-templated prompt; later turns' env ids are the new
    messages rendered the way the template renders them after an assistant turn, found as
    the text the template adds between "assistant reply" and "next generation prompt".
    """

    name = "trainer"

    def __init__(self, tokenizer: Any, generator: BatchingGenerator, max_context_tokens: int) -> None:
        self.tokenizer, self.generator, self.max_context = tokenizer, generator, max_context_tokens

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        if not conversation.token_ids:
            env_ids = self.prompt_ids(conversation.messages)
        else:
            ended = conversation.token_ids[-1] == self.tokenizer.eos_token_id
            env_ids = self.continuation_ids(conversation.messages, ended_with_eos=ended)
        context = list(conversation.token_ids) + env_ids
        room = self.max_context - len(context)
        if room <= 0:
            raise ContextOverflow(f"{len(context)} tokens already; the context holds {self.max_context}")
        result = await self.generator.generate(context, min(max_new_tokens, room))
        text = self.tokenizer.decode(result.ids, skip_special_tokens=True)
        return Generation(text=text, completion_ids=result.ids, env_ids=env_ids, logprobs=result.logprobs,
                          prompt_tokens=len(context), completion_tokens=len(result.ids),
                          finish_reason="stop" if result.stopped else "length")

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        return list(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                       return_dict=False))

    def continuation_ids(self, messages: list[dict[str, str]], ended_with_eos: bool = True) -> list[int]:
        """Ids for the messages after the last assistant reply, plus the next generation prompt."""
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        new = messages[last + 1:]
        probe = [{"role": "user", "content": "\x00probe"}, {"role": "assistant", "content": "\x00reply"}]
        rendered = self.tokenizer.apply_chat_template(probe + new, add_generation_prompt=True, tokenize=False)
        # Everything the template puts after the reply text: its end-of-turn token (which the
        # model generated itself when it stopped), then the new messages and the next header.
        suffix = rendered[rendered.rindex("\x00reply") + len("\x00reply"):]
        eos = self.tokenizer.eos_token or ""
        if eos and suffix.startswith(eos) and ended_with_eos:
            suffix = suffix[len(eos):]
        return list(self.tokenizer.encode(suffix, add_special_tokens=False))


async def run_task_episode(task: Task, policy: Any, sandbox_config: Any, limits: Any,
                           verify_timeout: float | None = None) -> Rollout:
    """Sandbox + `run_episode` + `verify` for one rollout of `task`."""
    from tbrl_lib.agent.episode import run_episode
    from tbrl_lib.agent.trajectory import Termination
    from tbrl_lib.rewards.verifier import verify
    from tbrl_lib.sandbox import open_sandbox

    started = time.monotonic()
    async with open_sandbox(task, config=sandbox_config) as sandbox:
        trajectory = await run_episode(task, policy, sandbox, limits)
        report = None
        if trajectory.termination != Termination.infra_error:
            report = await verify(task, sandbox, timeout=verify_timeout)
        stats = asdict(sandbox.stats)
    sandbox_metrics = {k: float(v) for k, v in stats.items() if isinstance(v, (int, float))}
    termination = trajectory.termination.value if trajectory.termination else "unknown"
    error = None
    if trajectory.termination == Termination.infra_error:
        error = f"episode: {trajectory.error_kind}: {trajectory.termination_message}"
    elif report is not None and report.infra_error:
        error = f"verifier: {report.error}"
    elif trajectory.prompt_ids is None or not trajectory.completion_ids:
        error = "policy returned no token ids (a training policy must work in tokens)"
    details = {"messages": trajectory.messages, "termination_message": trajectory.termination_message,
               "tests": report.to_dict() if report is not None else None}
    if error is not None:
        return Rollout(task.id, trajectory.prompt_ids or [], trajectory.completion_ids or [],
                       trajectory.env_mask or [], None, reward=None, infra_error=True, error=error,
                       termination=termination, turns=len(trajectory.turns),
                       seconds=time.monotonic() - started, sandbox=sandbox_metrics, details=details)
    return Rollout(task.id, trajectory.prompt_ids, trajectory.completion_ids, trajectory.env_mask,
                   trajectory.logprobs, reward=float(report.score), termination=termination,
                   turns=len(trajectory.turns), seconds=time.monotonic() - started,
                   sandbox=sandbox_metrics, details=details)
