"""A tiny Qwen3-architecture model and tokenizer, built locally (no model hub here).

`build_tiny_qwen3(texts, out_dir)` trains a byte-level BPE tokenizer on `texts` (tbrl's own
text: `tbrl_lib.models.tiny_corpus`, which renders the system prompts and the families' tasks
and so lives above the agent), adds Qwen3's special tokens (`<|im_start|>`, `<|im_end|>`,
`<think>`, `</think>`, `<|endoftext|>`), gives it a Qwen3-style chat template written here,
and saves a randomly initialised `Qwen3ForCausalLM` (`SIZES`: `smoke`, 2 layers, hidden 64;
`learn`) next to it. The result is cached under `out_dir/<content hash>/` (texts included),
so a second call is instant. It exercises the same code paths as Qwen/Qwen3-8B (HF policy,
token ids, GRPO `cpu-smoke` preset); untrained, it writes gibberish.

The chat template differs from Qwen3's on purpose in one way: earlier assistant turns are
rendered verbatim, thinking included, so a rendered conversation equals the concatenated
token ids the model actually saw (Qwen3's own template drops past `<think>` blocks).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
BUILDER_VERSION = "2"
QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}"
    "{%- endif -%}"
)
MODEL_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
    "rope_theta": 1_000_000.0,
}
VOCAB_SIZE = 2048
SIZES: dict[str, dict] = {
    "smoke": MODEL_CONFIG,
    # Wide and deep enough to copy an instance's code from the instruction (an induction-style
    # lookup over a ~2.4k-token prompt) after a few minutes of SFT on 2 CPU cores; the smoke
    # shape learns the action format but not the copy.
    "learn": {
        **MODEL_CONFIG,
        "hidden_size": 128,
        "intermediate_size": 384,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
    },
}
"""Tiny model shapes: `smoke` (plumbing tests, fastest) and `learn` (the CPU learning demo)."""


def build_tiny_qwen3(
    texts: list[str], out_dir: str | Path, seed: int = 0, size: str = "smoke"
) -> Path:
    """Build (or reuse) the tiny model of shape `SIZES[size]` whose tokenizer learned `texts`;
    returns the directory to pass to `from_pretrained`."""
    if size not in SIZES:
        raise ValueError(f"tiny model size {size!r} is unknown; use one of {sorted(SIZES)}")
    shape = SIZES[size]
    digest = hashlib.sha256(
        json.dumps([BUILDER_VERSION, seed, VOCAB_SIZE, shape, CHAT_TEMPLATE, texts]).encode()
    ).hexdigest()[:16]
    path = Path(out_dir) / f"tiny-qwen3-{digest}"
    if (path / "tbrl-build.json").exists():
        return path
    tmp = path.with_name(path.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(texts)
    tokenizer.save_pretrained(tmp)
    _init_model(tokenizer, seed, shape).save_pretrained(tmp)
    (tmp / "tbrl-build.json").write_text(
        json.dumps(
            {
                "builder_version": BUILDER_VERSION,
                "seed": seed,
                "texts": len(texts),
                "vocab_size": len(tokenizer),
            }
        )
    )
    if path.exists():  # another process won the race; keep its copy
        return path
    tmp.rename(path)
    return path


def _train_tokenizer(texts: list[str]):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers  # heavy
    from transformers import PreTrainedTokenizerFast  # heavy (the train extra): a build only

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<think>", "</think>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _init_model(tokenizer, seed: int, shape: dict):
    import torch  # heavy (the train extra): a build only
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        **shape,
    )
    return Qwen3ForCausalLM(config).eval()
