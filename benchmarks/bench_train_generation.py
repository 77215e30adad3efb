"""StepRollout generation: one request at a time (baseline) vs batched across concurrent episodes.

During a GRPO step, 16+ episodes wait for their next assistant turn at the same moment.
`BatchingGenerator` (tbrl_lib.train.model.trainer_policy) gathers those requests into one `generate`
call; the baseline serves them one by one, as a per-episode HF policy does. Both run here,
on the same model and the same prompts, and the table shows turns/s, generated tokens/s
(turns stop at the model's end-of-turn token, so token counts can differ a little) and the
speedup in turns/s.

    python benchmarks/bench_train_generation.py                 # tiny Qwen3 model, CPU, ~1 min
    python benchmarks/bench_train_generation.py --episodes 32 --turns 3 --prompt-tokens 1024

What it leaves out: sandboxes (see bench_sandbox.py) and vLLM (GPU machines only).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time


def measure(
    backend,
    episodes: int,
    turns: int,
    prompt_tokens: int,
    new_tokens: int,
    max_batch: int,
    vocab: int,
) -> tuple[float, int]:
    from tbrl_lib.train.model.trainer_policy import BatchingGenerator

    generator = BatchingGenerator(backend, max_batch=max_batch, window_s=0.005)
    rng = random.Random(0)
    generated = 0

    async def episode(i: int) -> None:
        nonlocal generated
        context = [rng.randrange(10, vocab) for _ in range(prompt_tokens)]
        for _ in range(turns):
            result = await generator.generate(context, new_tokens)
            generated += len(result.ids)
            context += result.ids + [
                rng.randrange(10, vocab) for _ in range(16)
            ]  # + an observation

    async def main() -> None:
        try:
            await asyncio.gather(*(episode(i) for i in range(episodes)))
        finally:
            await generator.aclose()

    start = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - start, generated


def run(episodes: int, turns: int, prompt_tokens: int, new_tokens: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tbrl_lib.models.tiny_corpus import build_tiny_model
    from tbrl_lib.train.model.trainer_policy import HFBackend

    torch.manual_seed(0)
    path = build_tiny_model("outputs/models")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    backend = HFBackend(model, tokenizer, temperature=1.2)
    rows = []
    for name, batch in [("one at a time (baseline)", 1), (f"batched (up to {episodes})", episodes)]:
        seconds, tokens = measure(
            backend, episodes, turns, prompt_tokens, new_tokens, batch, len(tokenizer)
        )
        rows.append((name, seconds, episodes * turns / seconds, tokens / seconds))
    base = rows[0][2]
    print(
        f"\n{episodes} episodes x {turns} turns, {prompt_tokens}-token prompts, {new_tokens} new tokens/turn "
        f"(tiny Qwen3, {torch.get_num_threads()} CPU threads)"
    )
    print(f"{'mode':<26} {'seconds':>9} {'turns/s':>9} {'new tok/s':>10} {'speedup':>8}")
    for name, seconds, rate, tok_rate in rows:
        print(f"{name:<26} {seconds:>9.2f} {rate:>9.2f} {tok_rate:>10.1f} {rate / base:>7.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--episodes", type=int, default=16, help="concurrent episodes (a GRPO group)"
    )
    parser.add_argument("--turns", type=int, default=2, help="assistant turns per episode")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parser.parse_args()
    run(args.episodes, args.turns, args.prompt_tokens, args.new_tokens)
