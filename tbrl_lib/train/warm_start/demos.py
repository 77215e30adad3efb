"""Oracle demonstrations recorded with exact token ids, and their dataset writer.

A demonstration is a real rollout (`run_rollout`: sandbox, episode, verifier, judge) whose
policy is a `TokenPolicy` like the trainer's, except that its sampler does not sample: it
emits a teacher's reply tokens, `encode(reply) + <|im_end|>`. The prompt, the observations
and the chat scaffolding therefore come from the one renderer (`TokenChat`) exactly as in
generation, and `prompt_ids` / `completion_ids` / `env_mask` are what a model that wrote
those replies would have produced. SFT on them (`tbrl_lib.train.warm_start.sft`) trains the same
token sequences GRPO later samples from.

Thinking: a reply takes the shape the model's template and `enable_thinking` ask for
(`TokenChat.reply_format`, `format_reply`): with thinking off (or a template without it)
the teacher's reasoning is dropped, the prompt already holds the template's empty block;
with Qwen3's thinking on, a teacher that `thinks` opens the reply with its reasoning in a
`<think>` block, one that does not writes none; where the template opens the block, the
reply continues it and closes it. The CPU demo's teacher does not think (its tiny model's
replies are 64 tokens).

`ShortOracle` is the teacher used for the CPU demo: one reply runs the task's reference
solution with `bash`, the next one finishes - the shortest trajectory a tiny model can
imitate. `OraclePolicy` (four replies with todos) is the long alternative.

Left out: re-tokenising text trajectories recorded elsewhere (never done: ids or nothing).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset

from tbrl_lib.agent.actions import render_action
from tbrl_lib.agent.parser import split_thinking
from tbrl_lib.policies.base import Conversation, Generation, Policy
from tbrl_lib.policies.chat import Sample, TokenChat, TokenPolicy
from tbrl_lib.rollout import RolloutConfig, RolloutResult, run_rollout
from tbrl_lib.tasks.model import Task


class ShortOracle:
    """Two replies: run the reference solution with `bash`, then `finish`.

    `solution` replaces the task's own: a weaker teacher is the same oracle running a
    slipped solution (`demo_teachers`)."""

    name = "short-oracle"

    def __init__(self, solution: str | None = None) -> None:
        self.solution = solution

    def solution_reply(self, conversation: Conversation) -> Generation:
        """The reply that runs the solution (this teacher's, else the task's) with `bash`."""
        solution = self.solution or conversation.task.solution
        return Generation(text=render_action("bash", {"cmd": solution.strip()}))

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        if conversation.turn == 0:
            return self.solution_reply(conversation)
        return Generation(text=render_action("finish", {"message": "done"}))

    def reasoning(self, conversation: Conversation) -> str:
        """What this teacher thinks before its reply (a thinking model's demonstration)."""
        if conversation.turn == 0:
            return "The instruction says what to produce and where. I will run the commands that do it."
        return "The commands ran without an error, so the task is done."


class CarefulOracle(ShortOracle):
    """Four replies that work the way the judge rewards (plan -> explore -> execute ->
    verify): add a todo and look at /app, run the solution, look again and complete the
    todo, finish. Only the solution reply depends on the task."""

    name = "careful-oracle"

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        look = render_action("bash", {"cmd": "ls /app"})
        if conversation.turn == 0:
            plan = render_action(
                "todo", {"operations": [{"action": "add", "content": "Do the task"}]}
            )
            return Generation(text=f"{plan}\n{look}")
        if conversation.turn == 1:
            return self.solution_reply(conversation)
        if conversation.turn == 2:
            done = render_action("todo", {"operations": [{"action": "complete", "task_id": 1}]})
            return Generation(text=f"{look}\n{done}")
        return Generation(text=render_action("finish", {"message": "done"}))


class TeacherSampler:
    """A `Sampler` that returns the next queued reply's tokens plus the end-of-turn id."""

    def __init__(self, chat: TokenChat) -> None:
        self.chat = chat
        self.queue: list[str] = []

    async def sample(
        self, prompt_ids: list[int], max_new_tokens: int, deadline: float | None = None
    ) -> Sample:
        end = _im_end(self.chat)
        ids = self.chat.encode(self.queue.pop(0)) + [
            end if end is not None else self.chat.stop_ids[-1]
        ]
        return Sample(ids=ids[:max_new_tokens], stopped=len(ids) <= max_new_tokens)


def _im_end(chat: TokenChat) -> int | None:
    found = chat.tokenizer.convert_tokens_to_ids("<|im_end|>")
    return found if isinstance(found, int) and found in chat.stop_ids else None


def format_reply(text: str, reply_format: str, reasoning: str = "") -> str:
    """A teacher's reply in the shape the chat expects (`TokenChat.reply_format`): `plain`
    drops any thinking; `think` puts `reasoning` (or the reply's own block) in a `<think>`
    block first, or writes none when there is no reasoning; `inside` continues the block the
    prompt opened and closes it (empty when there is no reasoning)."""
    own, rest, _ = split_thinking(text)
    rest = rest.strip()
    thought = own or reasoning
    if reply_format == "plain":
        return rest
    if reply_format == "inside":
        return f"{thought}\n</think>\n\n{rest}" if thought else f"</think>\n\n{rest}"
    return f"<think>\n{thought}\n</think>\n\n{rest}" if thought else rest


class TeacherPolicy(TokenPolicy):
    """A `TokenPolicy` whose replies come from a text teacher, tokenised by the one renderer.
    `thinks`: in a thinking chat, the teacher's reasoning opens each reply."""

    def __init__(
        self, teacher: Policy, chat: TokenChat, max_context: int, thinks: bool = False
    ) -> None:
        super().__init__(f"teacher:{teacher.name}", chat, TeacherSampler(chat), max_context)
        self.teacher, self.thinks = teacher, thinks
        self.reply_format = chat.reply_format

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        reply = await self.teacher.generate(conversation, max_new_tokens)
        reasoning = ""
        if self.thinks and isinstance(self.teacher, ShortOracle):
            reasoning = self.teacher.reasoning(conversation)
        text = reply.text if self.thinks else split_thinking(reply.text)[1]
        # One episode per policy object: the queue holds this turn's reply only.
        self.sampler.queue = [format_reply(text, self.reply_format, reasoning)]
        return await super().generate(conversation, max_new_tokens)


async def record_demos(
    tasks: Sequence[Task],
    tokenizer: Any,
    config: RolloutConfig | None = None,
    judge: Any | None = None,
    teachers: Sequence[Policy] | None = None,
    max_context: int = 4096,
    concurrency: int = 2,
    enable_thinking: bool = True,
    thinks: bool = False,
) -> list[RolloutResult]:
    """One teacher rollout per task (`teachers[i]` acts on `tasks[i]`; default the short
    oracle), token-exact; each gets its own policy (own queue). `enable_thinking` is the
    chat's flag (as in generation), `thinks` whether the teacher's reasoning goes in."""
    if teachers is not None and len(teachers) != len(tasks):
        raise ValueError(f"{len(teachers)} teachers for {len(tasks)} tasks: need one per task")
    gate = asyncio.Semaphore(concurrency)
    chat = TokenChat(tokenizer, enable_thinking)

    async def one(task: Task, teacher: Policy) -> RolloutResult:
        async with gate:
            policy = TeacherPolicy(teacher, chat, max_context, thinks)
            return await run_rollout(task, policy, config, judge)

    chosen = teachers or [ShortOracle() for _ in tasks]
    return list(await asyncio.gather(*(one(t, p) for t, p in zip(tasks, chosen, strict=True))))


def slip_of(task: Task) -> str | None:
    """The mistake a weaker teacher makes on `task`: its family's own (`Draft.slip`, kept in
    `metadata.synth.slip`), else its solution `slipped` into /tmp; None when it has neither."""
    own = task.metadata.get("synth", {}).get("slip")
    return own.strip() if own else slipped(task.solution or "")


def slipped(solution: str) -> str | None:
    """The solution as a teacher that writes its output to the wrong folder would run it:
    every output redirection (`> DIR/FILE`, `>> FILE`) sent to `/tmp/FILE` instead. The
    file name is still copied from the instruction, so imitation still learns to read it;
    only the folder is wrong. None when the solution redirects nothing outside /tmp."""
    lines = solution.strip().splitlines()
    moved = [REDIRECT.sub(r"\1/tmp/\3", line) for line in lines]
    return "\n".join(moved) if moved != lines else None


REDIRECT = re.compile(r"(>>?\s*)(\S*/)?([^/\s]+)\s*$")


def demo_teachers(
    tasks: Sequence[Task],
    accuracy: float,
    seed: int = 0,
    careful: float = 0.0,
) -> list[ShortOracle]:
    """A teacher per task, as a weaker model than the one being trained would demonstrate:
    with probability `careful` it works the way the judge rewards (`CarefulOracle`), else it
    just runs a solution and finishes (`ShortOracle`); that solution is the task's own with
    probability `accuracy`, else it slips (`slip_of`: the family's typical mistake, e.g.
    the right file written in /tmp), a mistake the tests catch and the reward alone can
    teach away. Every demonstration still reads its answer from its own instruction."""
    for name, share in (("accuracy", accuracy), ("careful", careful)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"teacher {name} {share}: must be within [0, 1]")
    rng = random.Random(f"tbrl-teacher:{seed}")
    teachers: list[ShortOracle] = []
    for task in tasks:
        kind = CarefulOracle if rng.random() < careful else ShortOracle
        slip = slip_of(task) if rng.random() >= accuracy else None
        teachers.append(kind(slip))
    return teachers


def demo_rows(results: Sequence[RolloutResult], min_reward: float = 1.0) -> list[dict[str, Any]]:
    """Dataset rows of the rollouts that scored at least `min_reward` on the tests (0 keeps
    a weaker teacher's mistakes too; `tests_score` says which rows are right)."""
    rows = []
    for r in results:
        traj = r.trajectory
        if r.infra_error or traj is None or not traj.completion_ids or r.tests is None:
            continue
        if r.tests.score < min_reward - 1e-9:
            continue
        rows.append(
            {
                "task_id": r.task_id,
                "prompt_ids": list(traj.prompt_ids),
                "completion_ids": list(traj.completion_ids),
                "env_mask": list(traj.env_mask),
                "reward": float(r.total or 0.0),
                "tests_score": float(r.tests.score),
                "careful": len(traj.turns) > 2,
            }
        )
    return rows


def write_demos(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write demonstration rows as Parquet (HF `datasets`); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_list(list(rows)).to_parquet(str(path))
    return path
