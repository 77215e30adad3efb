"""One training rollout end to end: sandbox, episode, verifier -> `Rollout`.

`run_task_episode(task, policy, sandbox_config, limits)` is what `RolloutRunner` calls for
each prompt entry. It uses the same `open_sandbox`, `run_episode` and `verify` as the
evaluation harness, so training and evaluation cannot drift. An episode that ended as
`infra_error`, a verifier `infra_error`, or a policy that produced no token ids makes the
rollout an infra error (masked out of training, see `rollout.py`).

`TrainerPolicy` is the token policy that samples from the trainer's current weights: it
renders the chat into token ids the way `HFPolicy` does and asks a `BatchingGenerator` for
the reply ids. What is left out: per-task thinking-mode switches.
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

    Renders turns exactly as `tbrl_lib.policies.hf.HFPolicy` does (the chat template once for
    the prompt, then `continuation_text` for each observation), but samples through a
    `BatchingGenerator`, so concurrent episodes share batched forward passes and the weights
    are always the trainer's current ones.
    """

    name = "trainer"

    def __init__(self, tokenizer: Any, generator: BatchingGenerator, max_context_tokens: int,
                 enable_thinking: bool = True) -> None:
        self.tokenizer, self.generator, self.max_context = tokenizer, generator, max_context_tokens
        self.enable_thinking = enable_thinking

    def env_ids(self, conversation: Conversation) -> list[int]:
        """Ids to append before this turn's generation (turn 1: the whole prompt)."""
        from tbrl_lib.policies.hf import continuation_text

        if not conversation.token_ids:
            text = self.tokenizer.apply_chat_template(conversation.messages, add_generation_prompt=True,
                                                      tokenize=False, enable_thinking=self.enable_thinking)
        else:
            last = max(i for i, m in enumerate(conversation.messages) if m["role"] == "assistant")
            text = continuation_text(self.tokenizer, conversation.messages[last + 1:],
                                     conversation.token_ids[-1], self.enable_thinking)
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        env_ids = self.env_ids(conversation)
        context = list(conversation.token_ids) + env_ids
        room = self.max_context - len(context)
        if room <= 0:
            raise ContextOverflow(f"{len(context)} tokens already; the context holds {self.max_context}")
        result = await self.generator.generate(context, min(max_new_tokens, room))
        text = self.tokenizer.decode(result.ids, skip_special_tokens=False)
        if result.stopped and result.ids:
            text = text[: len(text) - len(self.tokenizer.decode(result.ids[-1:]))]
        return Generation(text=text, completion_ids=result.ids, env_ids=env_ids, logprobs=result.logprobs,
                          prompt_tokens=len(context), completion_tokens=len(result.ids),
                          finish_reason="stop" if result.stopped else "length")


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
