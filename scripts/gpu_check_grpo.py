#!/usr/bin/env python
"""GPU check of the GRPO update on long multi-turn trajectories: step time, tokens/s, memory.

Self-contained: no Docker, no internet, no model hub. It builds a Qwen3-architecture model
of realistic size from a config (random init, bf16), makes synthetic multi-turn trajectories
(a prompt, then assistant turns with env_mask 1 and environment observations with env_mask
0, up to the chosen context length), and times:

1. `manual`: our reference update on one trajectory: forward, per-token log-probs of the
   completion, advantage-weighted mean over env_mask=1 tokens, backward, clip, AdamW step.
   It is the baseline, measured in the same run, and works without TRL.
2. `trl`: TRL's `GRPOTrainer` driven by a `rollout_func` that returns the same trajectories
   (prompt_ids / completion_ids / env_mask / logprobs=None), i.e. the path tbrl trains with.
   Skipped with a note when `trl` is not importable.

Run on the GPU machine (about 2-4 minutes on one H200):
    python scripts/gpu_check_grpo.py                         # Qwen3-1.7B shape, 8k and 32k context
    python scripts/gpu_check_grpo.py --contexts 8192 16384 --model-size 0.6b
On a CPU, to check that it runs at all (seconds):
    python scripts/gpu_check_grpo.py --tiny
A phase that would start after `--budget-s` seconds is skipped with a note, so the whole
script stays inside its time budget. What is left out: vLLM generation and sandboxes (no
Docker on the GPU machine); multi-GPU sharding.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time

import torch

SHAPES = {  # Qwen3 published configs (hidden, layers, intermediate, heads, kv_heads, head_dim, tied)
    "0.6b": (1024, 28, 3072, 16, 8, 128, True),
    "1.7b": (2048, 28, 6144, 16, 8, 128, True),
    "4b": (2560, 36, 9728, 32, 8, 128, True),
    "tiny": (64, 2, 128, 4, 2, 16, True),
}
VOCAB = 151_936
START = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {message}", flush=True)


def build_model(size: str, vocab: int, device: torch.device, dtype: torch.dtype):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    hidden, layers, inter, heads, kv, head_dim, tied = SHAPES[size]
    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=inter,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        tie_word_embeddings=tied,
        max_position_embeddings=40_960,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
    )
    config._attn_implementation = "sdpa"
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
    """A word-level tokenizer whose ids cover the model vocabulary (token i is `t<i>`)."""
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


def synthetic_trajectory(context: int, vocab: int, seed: int, prompt_len: int | None = None):
    """(prompt_ids, completion_ids, env_mask): assistant turns (mask 1) ending in EOS,
    alternating with environment observations (mask 0), filling `context` tokens."""
    rng = random.Random(seed)
    prompt_len = prompt_len or min(1024, context // 8)
    prompt = [rng.randrange(3, vocab) for _ in range(prompt_len)]
    completion, mask = [], []
    while len(prompt) + len(completion) < context:
        turn = [rng.randrange(3, vocab) for _ in range(rng.randint(64, max(65, context // 24)))] + [
            1
        ]
        obs = [rng.randrange(3, vocab) for _ in range(rng.randint(32, max(33, context // 12)))]
        completion += turn + obs
        mask += [1] * len(turn) + [0] * len(obs)
    room = context - len(prompt)
    completion, mask = completion[:room], mask[:room]
    return prompt, completion, mask


def manual_step(model, optimizer, trajectory, advantage: float, device) -> float:
    """Our reference GRPO update on one trajectory (ratio 1: on-policy, one iteration)."""
    prompt, completion, mask = trajectory
    ids = torch.tensor([prompt + completion], device=device)
    env_mask = torch.tensor(mask, device=device, dtype=torch.float32)
    logits = model(input_ids=ids, logits_to_keep=len(completion) + 1).logits[0, :-1]
    targets = ids[0, len(prompt) :]
    logps = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[:, None]).squeeze(-1)
    # exp(logp - logp.detach()) == 1 but carries the policy gradient, as in GRPO's ratio.
    ratio = torch.exp(logps - logps.detach())
    loss = -(ratio * advantage * env_mask).sum() / env_mask.sum().clamp(min=1)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def reset_peak(device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gib(device) -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else float("nan")


def run_manual(model, context, args, device) -> dict:
    model.train()
    if args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    trajectories = [
        synthetic_trajectory(context, model.config.vocab_size, seed=i)
        for i in range(args.steps + 1)
    ]
    reset_peak(device)
    manual_step(model, optimizer, trajectories[0], 1.0, device)  # warm-up (allocator, kernels)
    sync(device)
    start = time.perf_counter()
    for i in range(args.steps):
        norm = manual_step(model, optimizer, trajectories[i + 1], 1.0 if i % 2 else -1.0, device)
    sync(device)
    seconds = (time.perf_counter() - start) / args.steps
    trained = sum(trajectories[1][2])
    del optimizer
    return {
        "mode": "manual",
        "context": context,
        "seqs/step": 1,
        "trained_tokens": trained,
        "step_s": seconds,
        "grad_norm": norm,
        "tokens/s": context / seconds,
        "peak_gib": peak_gib(device),
    }


def run_trl(model, tokenizer, context, args, device) -> dict:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import trl  # noqa: F401  (ImportError here means: no TRL wheel installed)

    if device.type != "cuda":  # TRL's log-prob kernel is Triton (GPU only): use tbrl's torch one
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from tbrl_lib.train.trl_compat import install_torch_logprob_head

        install_torch_logprob_head()
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    group = args.num_generations
    prompts = [f"task-{i}" for i in range(args.steps + 1)]
    # A distinct trajectory per rollout (identical ones with +/- advantages cancel exactly).
    pool = [
        synthetic_trajectory(context, model.config.vocab_size, seed=100 + i)
        for i in range(group * len(prompts))
    ]
    served = []

    def rollout_func(batch_prompts, trainer):
        rows = [pool[(len(served) + i) % len(pool)] for i in range(len(batch_prompts))]
        served.extend(rows)
        return {
            "prompt_ids": [r[0] for r in rows],
            "completion_ids": [r[1] for r in rows],
            "logprobs": None,
            "env_mask": [r[2] for r in rows],
        }

    def reward(completions, **kwargs):
        return [float(i % 2) for i in range(len(completions))]  # varied: non-zero advantages

    class Timer(TrainerCallback):
        def __init__(self):
            self.times: list[float] = []

        def on_step_begin(self, *a, **k):
            sync(device)
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            sync(device)
            self.times.append(time.perf_counter() - self.t0)

    timer = Timer()
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="gpu-check-"),
        max_steps=args.steps + 1,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=group,
        num_generations=group,
        learning_rate=1e-6,
        max_grad_norm=0.1,
        temperature=1.2,
        bf16=device.type == "cuda",
        use_cpu=device.type != "cuda",
        gradient_checkpointing=args.gradient_checkpointing,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        shuffle_dataset=False,
        max_completion_length=context,
        seed=0,
        dataloader_num_workers=0,
        disable_tqdm=True,
        log_level="warning",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        processing_class=tokenizer,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        rollout_func=rollout_func,
        callbacks=[timer],
    )
    reset_peak(device)
    trainer.train()
    steady = timer.times[1:] or timer.times  # the first step pays for warm-up
    seconds = sum(steady) / len(steady)
    norms = [float(h["grad_norm"]) for h in trainer.state.log_history if "grad_norm" in h]
    if not norms or not all(0 < n < float("inf") for n in norms):
        raise RuntimeError(f"TRL gradient norms should be finite and > 0, got {norms}")
    return {
        "mode": "trl",
        "context": context,
        "seqs/step": group,
        "trained_tokens": sum(pool[0][2]),
        "step_s": seconds,
        "grad_norm": norms[-1],
        "tokens/s": group * context / seconds,
        "peak_gib": peak_gib(device),
    }


def print_table(rows: list[dict]) -> None:
    header = [
        "mode",
        "context",
        "seqs/step",
        "trained_tokens",
        "step_s",
        "tokens/s",
        "peak_gib",
        "grad_norm",
    ]
    print("\n" + " | ".join(f"{h:>14}" for h in header))
    print("-+-".join("-" * 14 for _ in header))
    for row in rows:
        cells = [
            f"{row[h]:>14.4g}" if isinstance(row[h], float) else f"{row[h]!s:>14}" for h in header
        ]
        print(" | ".join(cells))
    print(
        "(seqs/step = trajectories per optimizer step; trained_tokens = env_mask=1 tokens of one "
        "trajectory; tokens/s counts every token forward+backward)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny model and contexts (CPU check)")
    parser.add_argument("--model-size", choices=sorted(SHAPES), default="1.7b")
    parser.add_argument(
        "--contexts",
        type=int,
        nargs="+",
        default=None,
        help="trajectory lengths in tokens (default 8192 32768; --tiny: 256 512)",
    )
    parser.add_argument("--steps", type=int, default=2, help="timed optimizer steps per phase")
    parser.add_argument("--num-generations", type=int, default=4, help="trajectories per TRL step")
    parser.add_argument(
        "--budget-s", type=float, default=240.0, help="skip phases starting after this"
    )
    parser.add_argument(
        "--no-gradient-checkpointing", dest="gradient_checkpointing", action="store_false"
    )
    parser.add_argument("--skip-trl", action="store_true")
    args = parser.parse_args(argv)
    if args.tiny:
        args.model_size, args.contexts, vocab = "tiny", args.contexts or [256, 512], 1000
    else:
        args.contexts, vocab = args.contexts or [8192, 32768], VOCAB
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "none"
    log(
        f"python {platform.python_version()}, torch {torch.__version__}, device {device} ({gpu}), "
        f"model {args.model_size}, contexts {args.contexts}"
    )
    tokenizer = build_tokenizer(vocab)
    rows, notes = [], []
    for context in args.contexts:
        for mode in ("manual", "trl"):
            if mode == "trl" and args.skip_trl:
                continue
            if time.monotonic() - START > args.budget_s:
                notes.append(
                    f"skipped {mode} at context {context}: past the {args.budget_s:.0f}s budget"
                )
                continue
            model = build_model(args.model_size, vocab, device, dtype)
            n = sum(p.numel() for p in model.parameters())
            log(f"{mode}: context {context}, model {n / 1e9:.3f}B params")
            try:
                row = (
                    run_manual(model, context, args, device)
                    if mode == "manual"
                    else run_trl(model, tokenizer, context, args, device)
                )
            except ImportError as exc:
                notes.append(f"{mode} skipped: {exc} (install the trl wheel to time the TRL path)")
                continue
            except torch.OutOfMemoryError as exc:
                notes.append(f"{mode} at context {context}: out of memory ({str(exc)[:120]})")
                continue
            finally:
                del model
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            rows.append(row)
            log(
                f"{mode}: {row['step_s']:.2f}s/step, {row['tokens/s']:,.0f} tokens/s, "
                f"peak {row['peak_gib']:.1f} GiB"
            )
    print_table(rows)
    for note in notes:
        print("note:", note)
    ok = bool(rows) and all(r["step_s"] > 0 for r in rows)
    print(f"RESULT: {'OK' if ok else 'FAILED'} in {time.monotonic() - START:.0f}s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
