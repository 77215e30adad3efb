"""A tiny Qwen3 model and a word-level tokenizer with a Qwen3-style chat template, built in
memory (no hub), for the TRL contract tests. Token `t<i>` has id i."""

from __future__ import annotations

import pytest

QWEN3_STYLE_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tokenizer(vocab: int = 200):
    from tokenizers import Tokenizer, decoders
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    special = ["<pad>", "<|im_end|>", "<unk>", "<|im_start|>", "system", "user", "assistant"]
    words = {w: i for i, w in enumerate(special)}
    words.update({f"t{i}": i for i in range(len(special), vocab)})
    core = Tokenizer(WordLevel(words, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    core.decoder = decoders.WordPiece()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        eos_token="<|im_end|>",
        unk_token="<unk>",
        additional_special_tokens=["<|im_start|>"],
    )
    tok.chat_template = QWEN3_STYLE_TEMPLATE
    return tok


def make_model(vocab: int = 200, seed: int = 0):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=1,
        intermediate_size=64,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=1,
        pad_token_id=0,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = 1
    model.generation_config.pad_token_id = 0
    return model


@pytest.fixture
def tiny_tokenizer():
    return make_tokenizer()


@pytest.fixture
def tiny_model():
    return make_model()
