"""Token-exact chat turns: the one renderer every token policy uses (HF, trainer, vLLM).

A token policy never re-tokenizes the conversation. The first turn renders the chat
template once; every later turn appends only the environment's part, rendered by the same
template and tokenized on its own: the end of the model's turn (unless the model already
generated it), the observation as a user message, and the generation prompt. The model
always continues from exactly the ids it produced, and a trajectory is the plain
concatenation of those ids.

The end of turn: only a *stop token* at the end of a reply stands for the template's
end-of-turn marker. A reply cut by `max_new_tokens` gets the whole marker appended, even
when its last token happens to be a prefix of it (a cut on `<` must not turn `<|im_end|>`
into the text `|im_end|>`).

Thinking (`enable_thinking`, Qwen3's flag, passed to every template call): with it off,
Qwen3's template closes an empty `<think>` block in each generation prompt, so those ids
are the environment's; with it on, the model opens its own block. Earlier turns' reasoning
stays in the ids exactly as generated, although Qwen3's template, rendering a whole
conversation afresh, drops it (and the empty blocks): a trajectory is what the model saw
turn by turn, not what a fresh render of its messages would be. `reply_format` says which
of the three shapes a reply takes under this template and flag.

`TokenPolicy` is the `Policy` built on it: a `TokenChat`, a `Sampler` (anything that turns
prompt ids into sampled ids: `HFSampler`, the trainer's batching generator, vLLM) and a
context limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from tbrl_lib.policies.base import ContextOverflow, Conversation, Generation

_SENTINEL = "\ue000tbrl-assistant-sentinel\ue001"
END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>")
"""Chat end tokens (Qwen's) that stop generation when the vocabulary has them."""


def stop_token_ids(tokenizer: Any) -> list[int]:
    """EOS plus the chat end-of-turn tokens the vocabulary has, sorted."""
    ids = {tokenizer.eos_token_id}
    for token in END_OF_TURN_TOKENS:
        found = tokenizer.convert_tokens_to_ids(token)
        if isinstance(found, int) and found != tokenizer.unk_token_id:
            ids.add(found)
    return sorted(i for i in ids if i is not None)


@dataclass
class Sample:
    """What a sampler returns for one prompt."""

    ids: list[int]
    logprobs: list[float] | None = None
    """Log-probabilities of `ids` under the sampling distribution, when the backend has them."""
    stopped: bool = True
    """True when the reply ended on a stop token; False when `max_new_tokens` cut it."""


class Sampler(Protocol):
    async def sample(
        self, prompt_ids: list[int], max_new_tokens: int, deadline: float | None = None
    ) -> Sample:
        """Sample up to `max_new_tokens`; one that can stops at `deadline` (monotonic)."""
        ...


class TokenChat:
    """Renders conversations into token ids for one tokenizer and chat template."""

    def __init__(self, tokenizer: Any, enable_thinking: bool = True) -> None:
        self.tokenizer = tokenizer
        self.enable_thinking = enable_thinking
        self.stop_ids = stop_token_ids(tokenizer)

    @property
    def reply_format(self) -> str:
        """How a reply carries reasoning here: `think` (the model opens its own `<think>`
        block: Qwen3, thinking on), `inside` (the generation prompt ends inside an opened
        block; the reply reasons, then closes it: DeepSeek-R1, Qwen3 `-Thinking` models) or
        `plain` (no reasoning block: thinking off, or a template that knows no thinking)."""
        probe = [{"role": "user", "content": "u"}]
        prompt = self._render(probe, self.enable_thinking)
        if prompt.rstrip().endswith("<think>"):
            return "inside"
        if self.enable_thinking and prompt != self._render(probe, False):
            return "think"
        return "plain"

    def _render(self, messages: list[dict[str, str]], thinking: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, enable_thinking=thinking
        )

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """The first prompt: the whole conversation so far plus the generation prompt."""
        text = self.tokenizer.apply_chat_template(
            messages,
            add_generation_prompt=True,
            tokenize=False,
            enable_thinking=self.enable_thinking,
        )
        return self.encode(text)

    def turn_ids(self, conversation: Conversation) -> list[int]:
        """Ids to append before this turn's generation (turn 1: the whole prompt)."""
        if not conversation.token_ids:
            return self.prompt_ids(conversation.messages)
        messages = conversation.messages
        last_reply = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        return self.encode(
            self.continuation(messages[last_reply + 1 :], conversation.token_ids[-1])
        )

    def continuation(self, new_messages: list[dict[str, str]], last_token_id: int | None) -> str:
        """Template text after a finished reply: the rest of its end-of-turn marker, the new
        messages and the generation prompt."""
        shell = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _SENTINEL}]
        rendered = self.tokenizer.apply_chat_template(
            shell + new_messages,
            add_generation_prompt=True,
            tokenize=False,
            enable_thinking=self.enable_thinking,
        )
        suffix = rendered[rendered.index(_SENTINEL) + len(_SENTINEL) :]
        if last_token_id in self.stop_ids:
            generated = self.tokenizer.decode([last_token_id])
            if generated and suffix.startswith(generated):
                suffix = suffix[len(generated) :]
        return suffix

    def reply_text(self, ids: list[int], stopped: bool) -> str:
        """The reply as text, without the stop token that ended it."""
        body = ids[:-1] if stopped and ids and ids[-1] in self.stop_ids else ids
        return self.tokenizer.decode(body, skip_special_tokens=False)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))


class TokenPolicy:
    """A `Policy` that works in tokens: exact ids in, exact ids out, never re-tokenized.
    At the conversation's deadline its sampler stops and the reply so far comes back
    (`finish_reason="time_limit"`), so an episode out of time still records what the model
    wrote."""

    stops_at_deadline = True

    def __init__(self, name: str, chat: TokenChat, sampler: Sampler, max_context: int) -> None:
        self.name, self.chat, self.sampler, self.max_context = name, chat, sampler, max_context

    @property
    def tokenizer(self) -> Any:
        return self.chat.tokenizer

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        env_ids = self.chat.turn_ids(conversation)
        context = list(conversation.token_ids) + env_ids
        room = self.max_context - len(context)
        if room <= 0:
            raise ContextOverflow(
                f"{self.name}: the conversation has {len(context)} tokens; the context holds "
                f"{self.max_context}"
            )
        sample = await self.sampler.sample(
            context, min(max_new_tokens, room), deadline=conversation.deadline
        )
        late = conversation.deadline is not None and time.monotonic() >= conversation.deadline
        finish = "stop" if sample.stopped else ("time_limit" if late else "length")
        return Generation(
            text=self.chat.reply_text(sample.ids, sample.stopped),
            completion_ids=sample.ids,
            env_ids=env_ids,
            logprobs=sample.logprobs,
            prompt_tokens=len(context),
            completion_tokens=len(sample.ids),
            finish_reason=finish,
        )
