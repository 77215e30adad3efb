#!/usr/bin/env python
"""GPU check of GRPO training throughput: step time, tokens/s, peak memory and MFU.

One script, no hub, no Docker: a Qwen3-architecture model of a published shape (Qwen3-1.7B by
default) built from its config with random weights in bf16, synthetic multi-turn trajectories
(assistant turns with env_mask 1 between environment observations with env_mask 0) at long
context, and real TRL `GRPOTrainer` steps through a `rollout_func`, the path tbrl trains with.
Variants, each timed after one warm-up step:

    plain         the baseline, measured in the same run and without TRL: one trajectory per
                  step through a plain update (forward, log-probs of the completion,
                  advantage-weighted mean over env_mask=1 tokens, backward, clip, AdamW)
    full          full fine-tuning, TRL's defaults (sdpa or flash-attention 2 when installed)
    full+liger    the same with Liger's layer kernels (`use_liger_kernel`), when installed
    lora-peft     LoRA r=64 through PEFT (the 1xh200 preset's way), with --lora
    lora-unsloth  LoRA through unsloth, when installed, with --lora

MFU (model FLOPs utilisation) is tokens/s x 6N / peak: N the parameters (a tied embedding
counted once, for the LM head's matmul), every token forward and backward, gradient
checkpointing's recompute not counted; `mfu+attn` adds the attention matmuls (12 x layers x
hidden x context per token). Peak: dense bf16 of the GPU (`PEAK_TFLOPS`, H100/H200 989).

    python benchmarks/gpu_check.py                       # ~4-6 minutes on one H200
    python benchmarks/gpu_check.py --contexts 8192 32768 --lora
    python benchmarks/gpu_check.py --tiny                # CPU: the plumbing only, seconds

A variant that would start after `--budget-s` seconds is skipped with a note, so the whole
check stays inside its time budget; TRL's gradient norms must come out finite and > 0.

Without CUDA (and without --tiny) it refuses at once with one line. Left out: vLLM generation
and sandboxes (timed elsewhere); more than one GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass

import torch  # transformers, TRL, PEFT, unsloth: imported by the variant that needs them

SHAPES = {  # Qwen3 published configs: hidden, layers, intermediate, heads, kv heads, head_dim
    "0.6b": (1024, 28, 3072, 16, 8, 128),
    "1.7b": (2048, 28, 6144, 16, 8, 128),
    "4b": (2560, 36, 9728, 32, 8, 128),
    "8b": (4096, 36, 12288, 32, 8, 128),
    "tiny": (64, 2, 128, 4, 2, 16),
}
TIED = {"0.6b": True, "1.7b": True, "4b": True, "8b": False, "tiny": True}
VOCAB = 151_936
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0}
"""Dense bf16 peak per GPU (SXM parts); matched against the device name."""
START = time.monotonic()


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool

    @classmethod
    def named(cls, size: str, vocab: int = VOCAB) -> Shape:
        return cls(*SHAPES[size], vocab=vocab, tied=TIED[size])


def param_count(s: Shape) -> int:
    """Parameters of a Qwen3 model of shape `s` (as `sum(p.numel())` counts them)."""
    attn = s.hidden * s.head_dim * (s.heads + 2 * s.kv_heads) + s.heads * s.head_dim * s.hidden
    attn_norms = 2 * s.head_dim  # q_norm, k_norm
    mlp = 3 * s.hidden * s.intermediate
    layer = attn + attn_norms + mlp + 2 * s.hidden  # input and post-attention RMSNorm
    embed = s.vocab * s.hidden * (1 if s.tied else 2)
    return s.layers * layer + embed + s.hidden  # final norm


def flops_per_token(s: Shape, context: int, attention: bool = False) -> float:
    """Training FLOPs per token: 6N, plus 12 x layers x (heads x head_dim) x context with attention."""
    flops = 6.0 * param_count(s)
    if attention:
        flops += 12.0 * s.layers * s.heads * s.head_dim * context
    return flops


def mfu(tokens_per_s: float, s: Shape, context: int, peak_tflops: float, attention=False) -> float:
    """Model FLOPs utilisation (0..1) of `tokens_per_s` on a GPU of `peak_tflops`."""
    return tokens_per_s * flops_per_token(s, context, attention) / (peak_tflops * 1e12)


def peak_tflops_of(device_name: str) -> float | None:
    for key, value in PEAK_TFLOPS.items():
        if key in device_name:
            return value
    return None


def synthetic_trajectory(context: int, vocab: int, seed: int) -> tuple[list, list, list]:
    """(prompt_ids, completion_ids, env_mask) filling `context` tokens: assistant turns ending
    in EOS (id 1, mask 1) between environment observations (mask 0)."""
    rng = random.Random(seed)
    prompt = [rng.randrange(3, vocab) for _ in range(min(1024, context // 8))]
    completion: list[int] = []
    mask: list[int] = []
    while len(prompt) + len(completion) < context:
        turn = [rng.randrange(3, vocab) for _ in range(rng.randint(64, max(65, context // 24)))]
        obs = [rng.randrange(3, vocab) for _ in range(rng.randint(32, max(33, context // 12)))]
        completion += turn + [1] + obs
        mask += [1] * (len(turn) + 1) + [0] * len(obs)
    room = context - len(prompt)
    return prompt, completion[:room], mask[:room]


def log(message: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {message}", flush=True)


def build_model(s: Shape, device, dtype):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=s.vocab,
        hidden_size=s.hidden,
        num_hidden_layers=s.layers,
        intermediate_size=s.intermediate,
        num_attention_heads=s.heads,
        num_key_value_heads=s.kv_heads,
        head_dim=s.head_dim,
        tie_word_embeddings=s.tied,
        max_position_embeddings=40_960,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
    )
    flash = device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None
    config._attn_implementation = "flash_attention_2" if flash else "sdpa"
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3ForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = 1
    model.generation_config.pad_token_id = 0
    return model


def build_tokenizer(vocab: int):
    """Word-level tokenizer whose ids cover the vocabulary (token i is `t<i>`)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    words = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{f"t{i}": i for i in range(3, vocab)}}
    core = Tokenizer(WordLevel(words, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def plain_steps(model, s: Shape, context: int, args, device) -> dict:
    """Time `args.steps` plain updates (after one warm-up), one trajectory each, advantages
    alternating +1/-1 (the ratio is 1: on-policy, one iteration, as in GRPO's first pass)."""
    model.train()
    if args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    trajectories = [synthetic_trajectory(context, s.vocab, seed=i) for i in range(args.steps + 1)]

    def step(trajectory, advantage: float) -> float:
        prompt, completion, mask = trajectory
        ids = torch.tensor([prompt + completion], device=device)
        env_mask = torch.tensor(mask, device=device, dtype=torch.float32)
        logits = model(input_ids=ids, logits_to_keep=len(completion) + 1).logits[0, :-1]
        targets = ids[0, len(prompt) :]
        logps = torch.log_softmax(logits.float(), -1).gather(-1, targets[:, None]).squeeze(-1)
        ratio = torch.exp(logps - logps.detach())  # == 1, but carries the policy gradient
        loss = -(ratio * advantage * env_mask).sum() / env_mask.sum().clamp(min=1)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(norm)

    reset_peak(device)
    step(trajectories[0], 1.0)  # warm-up: allocator, kernels
    sync(device)
    start = time.perf_counter()
    norms = [step(trajectories[i + 1], 1.0 if i % 2 else -1.0) for i in range(args.steps)]
    sync(device)
    seconds = (time.perf_counter() - start) / args.steps
    return {
        "seqs/step": 1,
        "step_s": seconds,
        "tokens/s": context / seconds,
        "peak_gib": peak_gib(device),
        "grad_norm": norms[-1],
    }


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def reset_peak(device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gib(device) -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else float("nan")


def lora_model(variant: str, model, s: Shape, context: int):
    """The model with a LoRA r=64 adapter, through PEFT or unsloth (which loads from a folder)."""
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    if variant == "lora-peft":
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(r=64, lora_alpha=128, target_modules=targets, task_type="CAUSAL_LM")
        return get_peft_model(model, config)
    from unsloth import FastLanguageModel

    folder = tempfile.mkdtemp(prefix="gpu-check-model-")
    model.save_pretrained(folder)
    build_tokenizer(s.vocab).save_pretrained(folder)
    loaded, _ = FastLanguageModel.from_pretrained(
        model_name=folder, max_seq_length=context, dtype=None, load_in_4bit=False
    )
    return FastLanguageModel.get_peft_model(
        loaded, r=64, lora_alpha=128, target_modules=targets, use_gradient_checkpointing="unsloth"
    )


def grpo_steps(model, tokenizer, s: Shape, context: int, args, liger: bool, device) -> dict:
    """Time `args.steps` GRPOTrainer steps (after one warm-up) over synthetic trajectories."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    group = args.num_generations
    pool = [synthetic_trajectory(context, s.vocab, seed=i) for i in range(group * 2)]
    served = [0]

    def rollout_func(prompts, trainer):
        rows = [pool[(served[0] + i) % len(pool)] for i in range(len(prompts))]
        served[0] += len(prompts)
        return {
            "prompt_ids": [r[0] for r in rows],
            "completion_ids": [r[1] for r in rows],
            "logprobs": None,
            "env_mask": [r[2] for r in rows],
        }

    def reward(completions, **kwargs):
        return [float(i % 2) for i in range(len(completions))]  # non-zero advantages

    class Timer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []

        def on_step_begin(self, *a, **k):
            sync(device)
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            sync(device)
            self.times.append(time.perf_counter() - self.t0)

    timer = Timer()
    cuda = device.type == "cuda"
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="gpu-check-"),
        max_steps=args.steps + 1,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=group,
        num_generations=group,
        learning_rate=1e-6,
        max_grad_norm=0.1,
        loss_type="dapo",
        bf16=cuda,
        use_cpu=not cuda,
        gradient_checkpointing=args.gradient_checkpointing,
        use_liger_kernel=liger,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        shuffle_dataset=False,
        max_completion_length=context,
        dataloader_num_workers=0,
        disable_tqdm=True,
        log_level="warning",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        processing_class=tokenizer,
        train_dataset=Dataset.from_dict({"prompt": [f"task-{i}" for i in range(args.steps + 1)]}),
        rollout_func=rollout_func,
        callbacks=[timer],
    )
    reset_peak(device)
    trainer.train()
    steady = timer.times[1:] or timer.times
    seconds = sum(steady) / len(steady)
    norms = [float(h["grad_norm"]) for h in trainer.state.log_history if "grad_norm" in h]
    if not norms or not all(0 < n < float("inf") for n in norms):
        raise RuntimeError(f"TRL gradient norms should be finite and > 0, got {norms}")
    return {
        "seqs/step": group,
        "step_s": seconds,
        "tokens/s": group * context / seconds,
        "peak_gib": peak_gib(device),
        "grad_norm": norms[-1],
    }


def variants(lora: bool) -> list[tuple[str, str | None]]:
    """(variant, why skipped or None) in the order they run."""
    liger = importlib.util.find_spec("liger_kernel") is not None
    unsloth = importlib.util.find_spec("unsloth") is not None
    out = [
        ("plain", None),
        ("full", None),
        ("full+liger", None if liger else "liger-kernel is not installed"),
    ]
    if lora:
        out += [
            ("lora-peft", None),
            ("lora-unsloth", None if unsloth else "unsloth is not installed"),
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-size", choices=sorted(SHAPES), default="1.7b")
    parser.add_argument("--contexts", type=int, nargs="+", default=None, help="default 32768")
    parser.add_argument("--steps", type=int, default=2, help="timed steps after one warm-up")
    parser.add_argument("--num-generations", type=int, default=4, help="trajectories per step")
    parser.add_argument("--lora", action="store_true", help="also time LoRA (PEFT, unsloth)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="skip what starts later")
    parser.add_argument("--tiny", action="store_true", help="tiny shape on CPU: plumbing only")
    parser.add_argument(
        "--no-gradient-checkpointing", dest="gradient_checkpointing", action="store_false"
    )
    args = parser.parse_args(argv)
    global START
    START = time.monotonic()  # the budget counts from here (the module may be imported earlier)
    if args.tiny:
        device, dtype, size, vocab = torch.device("cpu"), torch.float32, "tiny", 1000
        contexts = args.contexts or [256]
        from tbrl_lib.train.model.trl_compat import install_torch_logprob_head

        install_torch_logprob_head()  # TRL's Triton log-prob kernel needs CUDA
    elif not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU here (torch.cuda.is_available() is False); nothing measured")
        return 2
    else:
        device, dtype, size, vocab = torch.device("cuda"), torch.bfloat16, args.model_size, VOCAB
        contexts = args.contexts or [32_768]
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    peak = peak_tflops_of(name)
    shape = Shape.named(size, vocab)
    params = param_count(shape) / 1e9
    log(f"torch {torch.__version__}, {name} (peak {peak} TFLOPS bf16), Qwen3-{size} shape")
    log(f"{params:.3f}B parameters, contexts {contexts}, {args.num_generations} per step")
    tokenizer = build_tokenizer(vocab)
    rows, notes = [], []
    for context in contexts:
        for variant, skip in variants(args.lora):
            if skip or time.monotonic() - START > args.budget_s:
                notes.append(f"{variant} @ {context}: {skip or 'past the time budget'}")
                continue
            model = build_model(shape, device, dtype)
            try:
                if variant == "plain":
                    row = plain_steps(model, shape, context, args, device)
                else:
                    if variant.startswith("lora"):
                        model = lora_model(variant, model, shape, context)
                    liger = "liger" in variant
                    row = grpo_steps(model, tokenizer, shape, context, args, liger, device)
            except torch.OutOfMemoryError as exc:
                notes.append(f"{variant} @ {context}: out of memory ({str(exc)[:100]})")
                continue
            finally:
                del model
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            row |= {"variant": variant, "context": context}
            if peak:
                row["mfu"] = mfu(row["tokens/s"], shape, context, peak)
                row["mfu+attn"] = mfu(row["tokens/s"], shape, context, peak, attention=True)
            rows.append(row)
            log(f"{variant} @ {context}: {row['step_s']:.2f} s/step, {row['tokens/s']:,.0f} tok/s")
    print_table(rows)
    for note in notes:
        print("skipped:", note)
    ok = bool(rows)
    print(f"RESULT: {'OK' if ok else 'FAILED'} in {time.monotonic() - START:.0f}s", flush=True)
    return 0 if ok else 1


def print_table(rows: list[dict]) -> None:
    columns = [
        "variant",
        "context",
        "seqs/step",
        "step_s",
        "tokens/s",
        "peak_gib",
        "mfu",
        "mfu+attn",
        "grad_norm",
    ]
    print("\n" + " | ".join(f"{c:>12}" for c in columns))
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c, "")
            if c.startswith("mfu") and value != "":
                cells.append(f"{100 * value:>11.1f}%")
            elif c == "grad_norm" and value != "":
                cells.append(f"{value:>12.3g}")
            elif isinstance(value, float):
                cells.append(f"{value:>12,.2f}")
            else:
                cells.append(f"{value!s:>12}")
        print(" | ".join(cells))


if __name__ == "__main__":
    sys.exit(main())
