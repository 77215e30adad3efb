"""`HFPolicy`: a local Hugging Face causal LM (transformers `generate`), token ids in and out.

The first turn renders the chat template once. Every later turn appends only the new
environment text - the end of the model's turn, the observation as a user message, the
generation prompt - rendered by the same template and tokenized on its own, to the ids
generated so far. The model therefore always continues from exactly the ids it produced,
and the trajectory is their plain concatenation (no re-tokenization, no drift).

Generation runs in a worker thread, one at a time per policy (CPU tests, the tiny smoke
model, small evaluations). Left out: batching across episodes - at scale, generation goes
through vLLM (`OpenAIPolicy` or the trainer's own engine).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from tbrl_lib.policies.base import ContextOverflow, Conversation, Generation

_SENTINEL = "\ue000tbrl-assistant-sentinel\ue001"


def continuation_text(tokenizer, new_messages: list[dict[str, str]], last_token_id: int | None,
                      enable_thinking: bool = True) -> str:
    """The template text that follows a finished assistant turn: its end-of-turn marker (minus
    what the model already generated), the new messages, and the generation prompt."""
    shell = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _SENTINEL}]
    rendered = tokenizer.apply_chat_template(shell + new_messages, add_generation_prompt=True, tokenize=False,
                                             enable_thinking=enable_thinking)
    suffix = rendered[rendered.index(_SENTINEL) + len(_SENTINEL):]
    if last_token_id is not None:
        generated = tokenizer.decode([last_token_id])
        if generated and suffix.startswith(generated):
            suffix = suffix[len(generated):]
    return suffix


class HFPolicy:
    def __init__(self, path: str | Path, *, temperature: float = 1.0, top_p: float = 1.0,
                 enable_thinking: bool = True, device: str = "cpu", seed: int | None = None) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = f"hf:{path}"
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModelForCausalLM.from_pretrained(str(path)).to(device).eval()
        self.device = device
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.enable_thinking = enable_thinking
        self.stop_ids = sorted({self.tokenizer.eos_token_id,
                                *[i for i in self.tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
                                  if isinstance(i, int) and i != self.tokenizer.unk_token_id]} - {None})
        self.max_context = getattr(self.model.config, "max_position_embeddings", 32768)
        self._lock = threading.Lock()

    def env_ids(self, conversation: Conversation) -> list[int]:
        """Ids to append before this turn's generation."""
        if not conversation.token_ids:
            text = self.tokenizer.apply_chat_template(conversation.messages, add_generation_prompt=True,
                                                      tokenize=False, enable_thinking=self.enable_thinking)
        else:
            last_assistant = max(i for i, m in enumerate(conversation.messages) if m["role"] == "assistant")
            last = conversation.token_ids[-1]  # only a stop token stands for the template's end-of-turn
            text = continuation_text(self.tokenizer, conversation.messages[last_assistant + 1:],
                                     last if last in self.stop_ids else None, self.enable_thinking)
        return self.tokenizer.encode(text, add_special_tokens=False)

    async def generate(self, conversation: Conversation, max_new_tokens: int) -> Generation:
        env = self.env_ids(conversation)
        prompt = list(conversation.token_ids) + env
        room = self.max_context - len(prompt)
        if room <= 0:
            raise ContextOverflow(f"{self.name}: the conversation has {len(prompt)} tokens; the model's context is "
                                  f"{self.max_context}")
        completion, logprobs = await asyncio.to_thread(self._locked_sample, prompt, min(max_new_tokens, room))
        finish = "stop" if completion and completion[-1] in self.stop_ids else "length"
        text = self.tokenizer.decode(completion, skip_special_tokens=False)
        if finish == "stop":
            text = text[: len(text) - len(self.tokenizer.decode(completion[-1:]))]
        return Generation(text=text, completion_ids=completion, env_ids=env, logprobs=logprobs,
                          prompt_tokens=len(prompt), completion_tokens=len(completion), finish_reason=finish)

    def _locked_sample(self, prompt: list[int], max_new_tokens: int) -> tuple[list[int], list[float]]:
        with self._lock:
            return self._sample(prompt, max_new_tokens)

    def _sample(self, prompt: list[int], max_new_tokens: int) -> tuple[list[int], list[float]]:
        import torch

        if self.seed is not None:
            torch.manual_seed(self.seed)
        input_ids = torch.tensor([prompt], device=self.device)
        with torch.no_grad():
            out = self.model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                      max_new_tokens=max_new_tokens, do_sample=self.temperature > 0,
                                      temperature=self.temperature or None, top_p=self.top_p,
                                      eos_token_id=self.stop_ids, pad_token_id=self.tokenizer.pad_token_id,
                                      return_dict_in_generate=True, output_logits=True)
        completion = out.sequences[0, len(prompt):].tolist()
        logits = torch.stack(out.logits, dim=1)[0].float()
        logprobs = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(completion).unsqueeze(1)).squeeze(1)
        return completion, logprobs.tolist()
